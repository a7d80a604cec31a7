"""Field-test cases: shapes of real training code that gradfix gets wrong (strict xfails) or right.

Each xfail is a minimal reproduction of a bug found by running gradfix on
realistic training scripts; it asserts the correct behaviour, so it starts
passing (and the strict xfail turns into a failure to remove) once fixed.
The executed checks run original and rewrite through `gradfix.harness` and
compare every gradient: a fix offered as safe must be exact.
"""

from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from gradfix.cli import main
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

HEAD = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
W = torch.randn(3, 3, requires_grad=True)


def kl(p, q):
    return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()

"""


def _src(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def _lint(src: str, codes, *, fix: bool = True, unsafe: bool = False):
    result = lint_bytes(src.encode(), "train.py", LintOptions(codes, fix=fix, unsafe_fixes=unsafe))
    assert result.error is None
    return result


def _safe_fix_is_exact(src: str, codes) -> None:
    """Every safe fix gradfix applies to `src` gives the same values and gradients when executed."""
    harness = pytest.importorskip("gradfix.harness")
    result = _lint(src, codes)
    if result.fixed is None:
        return  # no safe rewrite offered: nothing can be wrong
    report = harness.verify_pair(src, result.fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is None
    assert [r.key for r in report.rows if not r.ok] == []


def _unsafe_fix_is_exact(src: str, codes) -> None:
    """The fix gradfix offers as unsafe for `src` gives the same values and gradients, executed (a
    fix unsafe for what the file cannot show, exact where nothing outside the file interferes)."""
    harness = pytest.importorskip("gradfix.harness")
    fixed = _lint(src, codes, unsafe=True).fixed
    assert fixed is not None
    report = harness.verify_pair(src, fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is None
    assert [r.key for r in report.rows if not r.ok] == []


# ---------------------------------------------------------------------------
# 1. `xs.append(...)` / `xs.extend(...)` between the passes changes `xs[-1]`:
#    `append`/`extend` are on the harmless list whatever the receiver, so a
#    subscript operand read through the appended list gets a safe fix that
#    changes gradients (GF001, GF002 and GF004 alike). `xs.pop()`,
#    `xs.insert()` and `xs.reverse()` are correctly treated as unknown.

APPEND_GF001 = _src(
    """
    def step():
        xs, ys = [a * 2], [b * 3]
        l1 = F.mse_loss(xs[-1].detach(), ys[-1])
        l1.backward(retain_graph=True)
        xs.append(a * 7)
        l2 = -F.mse_loss(xs[-1], ys[-1].detach())
        l2.backward()
    """
)

EXTEND_GF001 = APPEND_GF001.replace("xs.append(a * 7)", "xs.extend([a * 7])")

APPEND_GF002 = _src(
    """
    def step():
        xs = [a * 2]
        y = b * 3
        q = F.mse_loss(xs[-1], y.detach())
        xs.append(a * 5)
        e = F.mse_loss(xs[-1].detach(), y)
        loss = q + 0.25 * e
        loss.backward()
    """
)

APPEND_GF004 = _src(
    """
    def step():
        xs = [a * 2]
        y = b * 3
        s = F.mse_loss(xs[-1], y.detach())
        xs.append(a * 5)
        p = F.mse_loss(xs[-1].detach(), y)
        loss1 = 1.0 - s
        loss2 = 2.0 + p
        loss1.backward(retain_graph=True)
        loss2.backward()
    """
)


@pytest.mark.parametrize(
    "src, codes",
    [
        (APPEND_GF001, ["GF001"]),
        (EXTEND_GF001, ["GF001"]),
        (APPEND_GF002, ["GF002"]),
        (APPEND_GF004, ["GF004"]),
    ],
    ids=["gf001_append", "gf001_extend", "gf002_append", "gf004_append"],
)
def test_append_to_operand_list_between_passes_gets_no_safe_fix(src, codes):
    result = _lint(src, codes)
    assert not any(f.fixable for f in result.findings)


def test_append_to_operand_list_between_passes_executed():
    _safe_fix_is_exact(APPEND_GF001, ["GF001"])


def test_pop_from_operand_list_between_passes_gets_no_finding():
    # `xs.pop()` changes what `xs[-1]` reads: the two passes evaluate different operands,
    # so the pattern does not hold (as for `append`, and a store into `xs[...]`).
    src = APPEND_GF001.replace("xs, ys = [a * 2], [b * 3]", "xs, ys = [a * 2, a * 5], [b * 3]").replace(
        "xs.append(a * 7)", "xs.pop()"
    )
    result = _lint(src, ["GF001"])
    assert result.findings == []
    assert not any(f.fixable for f in result.findings)


# ---------------------------------------------------------------------------
# 2. A helper's default argument value is not checked by the purity proof:
#    `def dist(u, v, w=W)` with `W` a trainable tensor is "parameter-free",
#    so the safe fix gives W the gradient ∂f/∂W where the original's two
#    passes cancelled to exactly 0. (Reading `W` in the body is caught.)

DEFAULT_ARG = _src(
    """
    def proj_dist(u, v, w=W):
        return F.mse_loss(u @ w, v)


    def step():
        x, y = a * 2, b * 3
        l1 = proj_dist(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -proj_dist(x, y.detach())
        l2.backward()
    """
)

DEFAULT_ARG_LAMBDA = _src(
    """
    dist = lambda u, v, w=W: F.mse_loss(u @ w, v)


    def step():
        x, y = a * 2, b * 3
        l1 = dist(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -dist(x, y.detach())
        l2.backward()
    """
)

DEFAULT_ARG_KWONLY = DEFAULT_ARG.replace("def proj_dist(u, v, w=W):", "def proj_dist(u, v, *, w=W):")


@pytest.mark.parametrize(
    "src", [DEFAULT_ARG, DEFAULT_ARG_LAMBDA, DEFAULT_ARG_KWONLY], ids=["function", "lambda", "kwonly"]
)
def test_helper_default_arg_trainable_tensor_is_unsafe(src):
    result = _lint(src, ["GF001"])
    assert [f.code for f in result.findings] == ["GF001"]
    assert [f.fixable for f in result.findings] == [False]


def test_helper_default_arg_trainable_tensor_executed():
    _safe_fix_is_exact(DEFAULT_ARG, ["GF001"])


def test_helper_reading_trainable_global_is_unsafe():
    # The same helper reading `W` in its body is (correctly) unsafe.
    src = DEFAULT_ARG.replace("def proj_dist(u, v, w=W):\n    return F.mse_loss(u @ w, v)", "def proj_dist(u, v):\n    return F.mse_loss(u @ W, v)")
    assert "u @ W" in src
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False]


# ---------------------------------------------------------------------------
# 3. GF002 with terms defined by name: a name read elsewhere *as a tensor
#    that is backpropagated* is rebuilt as a detached value, so its other
#    use loses its gradient. GF004 makes such a fix unsafe; GF002 offers it
#    as safe.

GF002_NAME_REUSED = _src(
    """
    def step():
        x, y = a * 2, b * 3
        q = F.mse_loss(x, y.detach())
        e = F.mse_loss(x.detach(), y)
        loss = q + 0.25 * e
        total = loss + 0.1 * e
        total.backward()
    """
)

# The same, where the other read is a second loss of the backward run (the
# term's net coefficient in the objective is 0, so GF004 rightly stays silent).
GF002_NAME_IN_OTHER_LOSS = _src(
    """
    def step():
        x, y = torch.softmax(a, -1), torch.softmax(b, -1)
        rec = (a ** 2).mean()
        s = kl(x, y.detach())
        p = kl(x.detach(), y)
        loss1 = rec - s
        loss2 = s + p
        loss1.backward(retain_graph=True)
        loss2.backward()
    """
)


@pytest.mark.parametrize("src", [GF002_NAME_REUSED, GF002_NAME_IN_OTHER_LOSS], ids=["reused_in_total", "in_other_loss"])
def test_gf002_name_read_as_tensor_elsewhere_executed(src):
    _safe_fix_is_exact(src, ["GF002"])


def test_gf002_name_read_as_tensor_elsewhere_is_unsafe():
    result = _lint(GF002_NAME_REUSED, ["GF002"])
    assert not any(f.fixable for f in result.findings)


# ---------------------------------------------------------------------------
# 4. The same pair of term names in two sums: GF002 reports the identical
#    finding (same position, same message) twice.

GF002_TWO_SUMS = _src(
    """
    def step():
        x, y = torch.softmax(a, -1), torch.softmax(b, -1)
        rec = (a ** 2).mean()
        s = kl(x, y.detach())
        p = kl(x.detach(), y)
        loss1 = rec - s + p
        loss2 = s - p + rec
        loss1.backward(retain_graph=True)
        loss2.backward()
    """
)


def test_gf002_no_duplicate_findings():
    result = _lint(GF002_TWO_SUMS, ["GF002"], fix=False)
    keys = [(f.line, f.col, f.code, f.message) for f in result.findings]
    assert len(keys) == len(set(keys)), keys


def test_gf002_two_sums_executed():
    _safe_fix_is_exact(GF002_TWO_SUMS, ["GF002"])


# ---------------------------------------------------------------------------
# 5. `gradfix rule --all`: the 28-character name column has no room for
#    `detached-terms-across-losses` (28 characters), which runs into the
#    default column: `detached-terms-across-lossesyes`.


def test_rule_table_columns_are_separated():
    result = CliRunner().invoke(main, ["rule", "--all"])
    assert result.exit_code == 0
    rows = [line.split() for line in result.output.splitlines()[1:] if line.strip()]
    assert rows
    for row in rows:
        assert row[2] in ("yes", "opt-in"), row
        assert row[3] in ("always", "sometimes", "never"), row


# ---------------------------------------------------------------------------
# 6. `gradfix rule GF004` says the backward run is left to GF003, but GF004's
#    own fix merges it (README: "The fix also merges the backward run"), as
#    it must: a loss left with only detached terms cannot be backpropagated.

GF004_ONLY_DETACHED_LEFT = _src(
    """
    def step():
        x, y = torch.softmax(a, -1), torch.softmax(b, -1)
        s = kl(x, y.detach())
        p = kl(x.detach(), y)
        loss1 = -0.5 * s
        loss2 = 2 * p
        loss2.backward(retain_graph=True)
        loss1.backward()
    """
)


def test_gf004_fix_merges_the_backward_run():
    result = _lint(GF004_ONLY_DETACHED_LEFT, ["GF004"])
    assert [f.fixable for f in result.findings] == [True]
    fixed = result.fixed.decode()
    assert "kl_shared = kl(x, grad_scale(y, -4.0))" in fixed
    assert fixed.count(".backward(") == 1 and "(loss2 + loss1).backward()" in fixed


def test_gf004_rule_doc_matches_fix():
    result = CliRunner().invoke(main, ["rule", "GF004"])
    assert result.exit_code == 0
    assert "left to GF003" not in result.output


# ---------------------------------------------------------------------------
# 7. README: "Nothing is reported when ... a random callee (dropout)". A bare
#    `nn.Dropout` callee is silent, but an `nn.Sequential` built in the same
#    file with an `nn.Dropout` layer (a critic with dropout, common in
#    adversarial alignment) is reported, with an unsafe fix that cannot be
#    exact in training mode.

DROPOUT_CRITIC = _src(
    """
    critic = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.ReLU(), nn.Linear(8, 1))


    def step():
        x, y = a * 2, b * 3
        l1 = critic(torch.cat([x.detach(), y], 1)).mean()
        l1.backward(retain_graph=True)
        l2 = -critic(torch.cat([x, y.detach()], 1)).mean()
        l2.backward()
    """
)


def test_sequential_with_dropout_callee_not_reported():
    result = _lint(DROPOUT_CRITIC, ["GF001"], fix=False)
    assert [f.code for f in result.findings] == []


# ---------------------------------------------------------------------------
# Near misses from the field that must stay silent for GF001/GF004 (locked in).

NEAR_MISSES = {
    # GAN: D on fake.detach() against zeros, then D on fake against ones (different targets).
    "gan_different_targets": """
        G = nn.Linear(4, 6)
        D = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
        z = torch.randn(5, 4)
        ones, zeros = torch.ones(5, 1), torch.zeros(5, 1)


        def step():
            fake = G(z)
            d_loss = F.binary_cross_entropy_with_logits(D(fake.detach()), zeros)
            d_loss.backward(retain_graph=True)
            g_loss = F.binary_cross_entropy_with_logits(D(fake), ones)
            g_loss.backward()
        """,
    # Different keyword arguments: reduction="sum" in one call only.
    "kwarg_differs": """
        def step():
            x, y = a * 2, b * 3
            l1 = F.mse_loss(x.detach(), y, reduction="sum")
            l1.backward(retain_graph=True)
            l2 = -F.mse_loss(x, y.detach())
            l2.backward()
        """,
    # Non-linear in f: -f(...) ** 2.
    "power_of_f": """
        def step():
            x, y = a * 2, b * 3
            l1 = F.mse_loss(x.detach(), y)
            l1.backward(retain_graph=True)
            l2 = -F.mse_loss(x, y.detach()) ** 2
            l2.backward()
        """,
    # A random operand: dropout applied to the operand in each call.
    "dropout_operand": """
        drop = nn.Dropout(0.5)


        def step():
            y = b * 3
            l1 = F.mse_loss(drop(a).detach(), y)
            l1.backward(retain_graph=True)
            l2 = -F.mse_loss(drop(a), y.detach())
            l2.backward()
        """,
    # cosine_similarity over different dims.
    "different_dim": """
        def step():
            x, y = a * 2, b * 3
            l1 = F.cosine_similarity(x.detach(), y, dim=1).mean()
            l1.backward(retain_graph=True)
            l2 = -F.cosine_similarity(x, y.detach(), dim=0).mean()
            l2.backward()
        """,
    # The index tensor is redrawn between the passes.
    "index_redrawn": """
        def step():
            x, y = a * 2, b * 3
            idx = torch.randperm(4)
            l1 = F.mse_loss(x[idx].detach(), y)
            l1.backward(retain_graph=True)
            idx = torch.randperm(4)
            l2 = -F.mse_loss(x[idx], y.detach())
            l2.backward()
        """,
    # GF004: one term under autocast, the other not (E4).
    "autocast_one_term": """
        def step():
            x, y = torch.softmax(a, -1), torch.softmax(b, -1)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                s = kl(x @ W, y.detach() @ W)
            p = kl(x.detach() @ W, y @ W)
            loss1 = -s
            loss2 = p
            loss1.backward(retain_graph=True)
            loss2.backward()
        """,
    # GF004: the coefficient is rebound between the two losses.
    "coefficient_rebound": """
        def step():
            k = 3.0
            x, y = torch.softmax(a, -1), torch.softmax(b, -1)
            rec = (a ** 2).mean()
            s = kl(x, y.detach())
            p = kl(x.detach(), y)
            loss1 = rec - k * s
            k *= 2
            loss2 = rec + k * p
            loss1.backward(retain_graph=True)
            loss2.backward()
        """,
}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_field_near_miss_silent(name):
    result = _lint(_src(NEAR_MISSES[name]), ["GF001", "GF004"], fix=False)
    assert [(f.code, f.line) for f in result.findings] == []


# ---------------------------------------------------------------------------
# 8. GF004 inlines a method helper on `self` (README: "a method on `self`"),
#    but not when that helper calls another pure method of the class
#    (`self.kl`), a common trainer layout: the association discrepancy goes
#    unreported (only GF003 fires). With a module-level `kl` it is found.
#    Related: GF001 on `self.kl(...)` says "`self.kl` is not assigned exactly
#    once in its class" for a method defined once with `def`.

METHOD_HELPER = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.net_s = nn.Linear(4, 4)
        self.net_p = nn.Linear(4, 4)
        self.k = 2.0
        self.x = torch.randn(3, 4)

    def kl(self, p, q):
        return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()

    def assoc(self, p, q):
        return self.kl(p, q.detach()) + self.kl(q.detach(), p)

    def train_step(self):
        s = torch.softmax(self.net_s(self.x), -1)
        p = torch.softmax(self.net_p(self.x), -1)
        rec = (s - p).abs().mean()
        s_loss = self.assoc(s, p)
        p_loss = self.assoc(p, s)
        loss1 = rec - self.k * s_loss
        loss2 = rec + self.k * p_loss
        loss1.backward(retain_graph=True)
        loss2.backward()
"""


def test_gf004_method_helper_calling_pure_method_is_found():
    result = _lint(METHOD_HELPER, ["GF004"], fix=False)
    assert [(f.code, f.line) for f in result.findings] == [("GF004", 23), ("GF004", 23)]


def test_gf004_method_helper_calling_module_function_is_found():
    src = METHOD_HELPER.replace(
        "    def kl(self, p, q):\n        return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()\n\n", ""
    ).replace("self.kl(", "kl(").replace(
        "class Trainer:",
        "def kl(p, q):\n    return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()\n\n\nclass Trainer:",
    )
    assert "def kl(self" not in src and "self.kl(" not in src
    result = _lint(src, ["GF004"], fix=False)
    # Reported at the call site of the second loss's helper.
    line = src.splitlines().index("        p_loss = self.assoc(p, s)") + 1
    assert [(f.code, f.line) for f in result.findings] == [("GF004", line), ("GF004", line)]
