"""GF002 with a term's name bound in both branches of an `if`/`else` (issue 12):

    q_latent = F.mse_loss(z_q, z.detach())
    if USE_EMA:
        e_latent = F.mse_loss(z_q.detach(), z)
    else:
        e_latent = F.mse_loss(z_q.detach(), z) * SCALE
    loss = rec + q_latent + BETA * e_latent

Each branch gets its own one evaluation where it evaluated `f` (its coefficient is known only
there), the other term's definition moves into it, and the branch's name is rebuilt detached
from it. Every safe rewrite here is executed against the original with the condition true and
false; the refusals are near misses where the rewrite would not be exact.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact, _unsafe_fix_is_exact

HEAD = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc = nn.Linear(4, 4)
dec = nn.Linear(4, 4)
codebook = nn.Parameter(torch.randn(6, 4))
BETA = 0.25
SCALE = 2.0
USE_EMA = {flag}
x = torch.randn(5, 4)
log = []


def poke():
    with torch.no_grad():
        codebook.mul_(0.5)


def step():
    z = enc(x)
    z_q = codebook[torch.cdist(z, codebook).argmin(1)]
'''
# The body starts at line 24.

TAIL = '''\
    rec = F.mse_loss(dec(z + (z_q - z).detach()), x)
    loss = rec + vq
    loss.backward()
'''

BASIC = (
    "    q_latent = F.mse_loss(z_q, z.detach())\n"
    "    if USE_EMA:\n"
    "        e_latent = F.mse_loss(z_q.detach(), z)\n"
    "    else:\n"
    "        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n"
    "    vq = q_latent + BETA * e_latent\n"
)


# The `if` first, the other term's definition below it.
IF_FIRST = (
    "    if USE_EMA:\n"
    "        e_latent = F.mse_loss(z_q.detach(), z)\n"
    "    else:\n"
    "        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n"
    "    q_latent = F.mse_loss(z_q, z.detach())\n"
    "    vq = q_latent + BETA * e_latent\n"
)


def _src(body: str, flag: bool = True) -> str:
    return HEAD.format(flag=flag) + body + TAIL


BOTH = pytest.mark.parametrize("flag", [True, False], ids=["if_branch", "else_branch"])


def _fixed_body(src: str) -> str:
    result = _lint(src, ["GF002"], unsafe=True)
    fixed = result.fixed.decode()
    assert fixed.endswith(TAIL)
    return fixed[fixed.index("    z_q = codebook") :].split("\n", 1)[1][: -len(TAIL)]


@BOTH
def test_each_branch_gets_its_own_one_evaluation(flag):
    src = _src(BASIC, flag)
    result = _lint(src, ["GF002"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(26, 20, True)]
    assert "(line 24 and here; the `else` branch's at line 28)" in result.findings[0].message
    assert _fixed_body(src) == (
        "    if USE_EMA:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, BETA))\n"
        "        e_latent = q_latent.detach().clone()\n"
        "    else:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, BETA * SCALE))\n"
        "        e_latent = q_latent.detach() * SCALE\n"
        "    vq = q_latent + BETA * e_latent\n"
    )
    assert "from gradfix.autograd import grad_scale\n" in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF002"])


@BOTH
def test_signs_coefficients_and_the_other_term_read_elsewhere(flag):
    # The branch term first and subtracted, the other term weighted in its definition and logged:
    # the one evaluation gets a new name, `q_latent` is rebuilt detached in each branch, and the
    # other term in the sum carries the correction for its own coefficient.
    body = (
        "    q_latent = 0.5 * F.mse_loss(z_q, z.detach())\n"
        "    log.append(0.0)\n"
        "    if USE_EMA:\n"
        "        e_latent = -F.mse_loss(z_q.detach(), z)\n"
        "        log.append(1.0)\n"
        "    else:\n"
        "        log.append(2.0)\n"
        "        e_latent = F.mse_loss(z_q.detach(), z) / 4\n"
        "    vq = BETA * e_latent - 3 * q_latent\n"
        "    log.append(q_latent.item())\n"
    )
    src = _src(body, flag)
    result = _lint(src, ["GF002"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(27, 21, True)]
    assert _fixed_body(src) == (
        "    log.append(0.0)\n"
        "    if USE_EMA:\n"
        "        q_latent_term = F.mse_loss(grad_scale(z_q, 1.5), grad_scale(z, BETA))\n"
        "        q_latent = 0.5 * q_latent_term.detach()\n"
        "        e_latent = -q_latent_term.detach()\n"
        "        log.append(1.0)\n"
        "    else:\n"
        "        log.append(2.0)\n"
        "        q_latent_term = F.mse_loss(grad_scale(z_q, 1.5), grad_scale(z, -0.25 * BETA))\n"
        "        q_latent = 0.5 * q_latent_term.detach()\n"
        "        e_latent = q_latent_term.detach() / 4\n"
        "    vq = BETA * e_latent - (q_latent_term + (0.5 * q_latent_term).detach())\n"
        "    log.append(q_latent.item())\n"
    )
    _safe_fix_is_exact(src, ["GF002"])


@BOTH
def test_links_above_the_sum(flag):
    # The branch term weighted by a name after the `if` (kept: the sum reads its value), the
    # other term through a link nothing else reads (removed).
    body = (
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    if USE_EMA:\n"
        "        e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    else:\n"
        "        e_latent = 3 * F.mse_loss(z_q.detach(), z)\n"
        "    commitment = BETA * e_latent\n"
        "    codebook_loss = 2 * q_latent\n"
        "    vq = codebook_loss + commitment\n"
    )
    src = _src(body, flag)
    result = _lint(src, ["GF002"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(26, 20, True)]
    assert _fixed_body(src) == (
        "    if USE_EMA:\n"
        "        q_latent = F.mse_loss(grad_scale(z_q, 2.0), grad_scale(z, BETA))\n"
        "        e_latent = q_latent.detach().clone()\n"
        "    else:\n"
        "        q_latent = F.mse_loss(grad_scale(z_q, 2.0), grad_scale(z, 3.0 * BETA))\n"
        "        e_latent = 3 * q_latent.detach()\n"
        "    commitment = BETA * e_latent\n"
        "    vq = q_latent + q_latent.detach() + commitment\n"
    )
    _safe_fix_is_exact(src, ["GF002"])


@BOTH
def test_coefficient_not_proven_a_number_is_unsafe_and_exact(flag):
    # As for any GF002 coefficient (fixture u01): a branch's coefficient read from a name bound
    # twice is not proven a number. Exact here, executed.
    src = _src(BASIC.replace("* SCALE", "* scale"), flag).replace("SCALE = 2.0\n", "SCALE = 2.0\nscale = 1.0\nscale = 3.0\n")
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`scale`" in result.findings[0].message
    _unsafe_fix_is_exact(src, ["GF002"])


@BOTH
def test_branch_name_read_as_tensor_is_unsafe(flag):
    body = BASIC + "    log.append(e_latent * 1.0)\n"
    src = _src(body, flag)
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`e_latent` is also read as a tensor (line 30)" in result.findings[0].message


def test_unknown_call_before_the_evaluation_in_a_branch_is_unsafe():
    body = BASIC.replace("    if USE_EMA:\n", "    if USE_EMA:\n        log.append(len(log))\n        poke()\n")
    result = _lint(_src(body), ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`poke()` between the definitions and the sum may modify an operand" in result.findings[0].message


@pytest.mark.parametrize(
    "body",
    [
        # An `elif` chain without an `else`; an `elif`'s test that changes an operand.
        BASIC.replace("    else:\n        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n", "    elif SCALE > 1:\n        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n"),
        BASIC.replace("    else:\n", "    elif z.mul_(2) is None:\n        e_latent = F.mse_loss(z_q.detach(), z)\n    else:\n"),
        # A branch that does not bind the name: it keeps the value from before the `if`.
        BASIC.replace("        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n", "        pass\n"),
        # No `else`.
        BASIC.replace("    else:\n        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n", ""),
        # The name rebound after its evaluation in a branch: not linear in it.
        BASIC.replace("* SCALE\n", "* SCALE\n        e_latent = e_latent.clamp(max=1.0)\n"),
        # A different callee in one branch.
        BASIC.replace("F.mse_loss(z_q.detach(), z) * SCALE", "F.l1_loss(z_q.detach(), z) * SCALE"),
        # An operand rebound in a branch before its evaluation, or in place, or by the test.
        BASIC.replace("    else:\n", "    else:\n        z = z * 2\n"),
        BASIC.replace("    if USE_EMA:\n", "    if USE_EMA:\n        z.mul_(2)\n"),
        BASIC.replace("    if USE_EMA:\n", "    if (z := z * 2) is not None:\n"),
        # The other term's name read before the one evaluation that now binds it: in the test,
        # in a branch, between its definition and the `if`.
        BASIC.replace("    if USE_EMA:\n", "    if q_latent.item() > 0:\n"),
        BASIC.replace("    else:\n", "    else:\n        log.append(q_latent.item())\n"),
        BASIC.replace("    if USE_EMA:\n", "    log.append(q_latent.item())\n    if USE_EMA:\n"),
        # The `if` above the other term's definition, whose evaluation would move up into the
        # branches: past an operand rebound (after the `if`, or after the branch's evaluation: the
        # straight-through estimator), changed in place, or past a read of the other term's name.
        IF_FIRST.replace("    q_latent =", "    z = z * 2\n    q_latent ="),
        IF_FIRST.replace("* SCALE\n", "* SCALE\n        z_q = z + (z_q - z).detach()\n"),
        IF_FIRST.replace("    q_latent =", "    z_q.mul_(2)\n    q_latent ="),
        IF_FIRST.replace("    q_latent =", "    log.append(q_latent)\n    q_latent ="),
        IF_FIRST.replace("    else:\n", "        log.append(q_latent)\n    else:\n"),
        # Both terms bound in the branches.
        "    if USE_EMA:\n"
        "        q_latent = F.mse_loss(z_q, z.detach())\n"
        "        e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    else:\n"
        "        q_latent = F.mse_loss(z_q, z.detach())\n"
        "        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n"
        "    vq = q_latent + BETA * e_latent\n",
        # A branch coefficient that reads the other term's name: not linear.
        BASIC.replace("* SCALE", "* q_latent"),
        # A branch on the `if`'s line.
        BASIC.replace("    else:\n        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n", "    else: e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n"),
    ],
    ids=[
        "elif_without_else", "elif_test_changes_operand", "branch_without_binding", "no_else", "rebound_in_branch", "different_callee", "operand_rebound",
        "operand_inplace", "test_rebinds_operand", "test_reads_other_term", "branch_reads_other_term",
        "other_term_read_before_if", "if_first_operand_rebound", "if_first_straight_through_in_branch",
        "if_first_inplace", "if_first_other_name_read_between", "if_first_other_name_read_in_branch", "both_in_branches", "coefficient_reads_term", "one_line_branch",
    ],
)
def test_refused(body):
    assert _lint(_src(body), ["GF002"], unsafe=True).findings == []


@BOTH
def test_the_other_definition_below_the_if(flag):
    # Its evaluation moves up into each branch, past statements that leave the operands alone.
    body = IF_FIRST.replace("    q_latent =", "    log.append(e_latent.item())\n    q_latent =")
    src = _src(body, flag)
    result = _lint(src, ["GF002"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(25, 20, True)]
    assert "(line 29 and here; the `else` branch's at line 27)" in result.findings[0].message
    assert _fixed_body(src) == (
        "    if USE_EMA:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, BETA))\n"
        "        e_latent = q_latent.detach().clone()\n"
        "    else:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, BETA * SCALE))\n"
        "        e_latent = q_latent.detach() * SCALE\n"
        "    log.append(e_latent.item())\n"
        "    vq = q_latent + BETA * e_latent\n"
    )
    _safe_fix_is_exact(src, ["GF002"])


@BOTH
def test_the_other_definition_below_the_if_weighted_and_read_elsewhere(flag):
    body = (
        "    if USE_EMA:\n"
        "        e_latent = -F.mse_loss(z_q.detach(), z)\n"
        "    else:\n"
        "        e_latent = F.mse_loss(z_q.detach(), z) / 4\n"
        "    q_latent = 0.5 * F.mse_loss(z_q, z.detach())\n"
        "    vq = BETA * e_latent - 3 * q_latent\n"
        "    log.append(q_latent.item())\n"
    )
    src = _src(body, flag)
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [True]
    assert _fixed_body(src) == (
        "    if USE_EMA:\n"
        "        q_latent_term = F.mse_loss(grad_scale(z_q, 1.5), grad_scale(z, BETA))\n"
        "        q_latent = 0.5 * q_latent_term.detach()\n"
        "        e_latent = -q_latent_term.detach()\n"
        "    else:\n"
        "        q_latent_term = F.mse_loss(grad_scale(z_q, 1.5), grad_scale(z, -0.25 * BETA))\n"
        "        q_latent = 0.5 * q_latent_term.detach()\n"
        "        e_latent = q_latent_term.detach() / 4\n"
        "    vq = BETA * e_latent - (q_latent_term + (0.5 * q_latent_term).detach())\n"
        "    log.append(q_latent.item())\n"
    )
    _safe_fix_is_exact(src, ["GF002"])


@BOTH
def test_the_other_definition_below_the_if_past_an_unknown_call_is_unsafe(flag):
    # `poke()` changes the codebook in place; `z_q` is a copy (indexing), so the fix is exact here.
    src = _src(IF_FIRST.replace("    q_latent =", "    poke()\n    q_latent ="), flag)
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`poke()` between the definitions and the sum may modify an operand" in result.findings[0].message
    _unsafe_fix_is_exact(src, ["GF002"])


@pytest.mark.parametrize("stage", [0, 1, 2])
def test_an_elif_chain(stage):
    # Each branch gets its own one evaluation, after the tests that run before it.
    body = (
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    if USE_EMA == 0:\n"
        "        e_latent = 0.1 * F.mse_loss(z_q.detach(), z)\n"
        "    elif USE_EMA == 1:\n"
        "        e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    else:\n"
        "        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n"
        "    vq = q_latent + BETA * e_latent\n"
    )
    src = _src(body, stage)
    result = _lint(src, ["GF002"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(26, 26, True)]
    assert "(line 24 and here; the other branches' at lines 28, 30)" in result.findings[0].message
    assert _fixed_body(src) == (
        "    if USE_EMA == 0:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, 0.1 * BETA))\n"
        "        e_latent = 0.1 * q_latent.detach()\n"
        "    elif USE_EMA == 1:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, BETA))\n"
        "        e_latent = q_latent.detach().clone()\n"
        "    else:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, BETA * SCALE))\n"
        "        e_latent = q_latent.detach() * SCALE\n"
        "    vq = q_latent + BETA * e_latent\n"
    )
    _safe_fix_is_exact(src, ["GF002"])


def test_an_elif_test_reading_the_other_term_is_refused():
    body = (
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    if USE_EMA:\n"
        "        e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    elif q_latent.item() > 1:\n"
        "        e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    else:\n"
        "        e_latent = F.mse_loss(z_q.detach(), z) * SCALE\n"
        "    vq = q_latent + BETA * e_latent\n"
    )
    assert _lint(_src(body), ["GF002"], unsafe=True).findings == []


@BOTH
def test_statements_after_the_evaluation_in_a_branch(flag):
    # After the one evaluation, as after both definitions above: the straight-through rebinding of
    # an operand changes neither term, and a value read of the branch's name sees its value.
    body = BASIC.replace(
        "* SCALE\n", "* SCALE\n        log.append(e_latent.item())\n        z_q = z + (z_q - z).detach()\n"
    )
    src = _src(body, flag)
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    _safe_fix_is_exact(src, ["GF002"])


def test_coefficient_bound_after_the_evaluation_is_unsafe():
    # The original reads `beta` in the sum; the one evaluation reads it in the branch, before the
    # statement that binds it (an UnboundLocalError if applied).
    body = BASIC.replace("    vq = q_latent + BETA * e_latent\n", "    beta = 0.25\n    vq = q_latent + beta * e_latent\n")
    result = _lint(_src(body), ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "coefficient `beta` is bound after the one evaluation that reads it" in result.findings[0].message


@BOTH
def test_lines_above_the_removed_definition_stay_above_the_if(flag):
    # Regression (fuzz): the removed definition's blank line and comment move onto the `if`, which
    # must then still get its branches' changes.
    src = _src("\n    # codebook loss\n" + BASIC, flag)
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [True]
    assert _fixed_body(src) == (
        "\n"
        "    # codebook loss\n"
        "    if USE_EMA:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, BETA))\n"
        "        e_latent = q_latent.detach().clone()\n"
        "    else:\n"
        "        q_latent = F.mse_loss(z_q, grad_scale(z, BETA * SCALE))\n"
        "        e_latent = q_latent.detach() * SCALE\n"
        "    vq = q_latent + BETA * e_latent\n"
    )
    _safe_fix_is_exact(src, ["GF002"])


def test_module_level_script():
    # At module level the other term's name is a global (visible to importers): it is kept,
    # rebuilt detached in each branch after the one evaluation, which gets a new name.
    src = (
        "import torch\nimport torch.nn.functional as F\n\nK = 0.5\n"
        "a = torch.randn(4, 3, requires_grad=True)\nb = torch.randn(4, 3, requires_grad=True)\n\n"
        "q = F.mse_loss(a, b.detach())\n"
        "if K > 0.25:\n    e = F.mse_loss(a.detach(), b)\nelse:\n    e = F.mse_loss(a.detach(), b)\n"
        "loss = q + e\nloss.backward()\n"
    )
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [True]
    assert result.fixed.decode().endswith(
        "\n\nif K > 0.25:\n"
        "    q_term = F.mse_loss(a, b)\n    q = q_term.detach().clone()\n    e = q_term.detach().clone()\n"
        "else:\n"
        "    q_term = F.mse_loss(a, b)\n    q = q_term.detach().clone()\n    e = q_term.detach().clone()\n"
        "loss = q_term + e\nloss.backward()\n"
    )
    _safe_fix_is_exact(src, ["GF002"])
