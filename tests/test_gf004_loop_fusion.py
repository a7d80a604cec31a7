"""GF004 across two `for` loops over one range (issue 12): the Anomaly-Transformer variant.

    for u in range(len(prior)):
        series_loss += kl(series[u], prior[u].detach())
    for u in range(len(prior)):
        prior_loss += kl(series[u].detach(), prior[u])

Iteration `u` of each loop evaluates the pair on the same operands. The fix evaluates once in
the first loop, appends the value the second loop's term takes to a list made before the first
loop, and the second loop reads item `u`. That needs the same iterations twice (`range(N)`
written alike, the bound unchanged) and operands that nothing in either loop, or between them,
changes. Every rewrite is executed against the original, through all of its passes.
"""

from __future__ import annotations

import pytest

from gradfix import api
from tests.test_field_cases import _lint

HEAD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
K = 3.0
log = []


def kl(p, q):
    return (p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))).sum(-1).mean()


def step():
    series = [torch.softmax(enc(x[i]), -1) for i in range(3)]
    prior = [torch.softmax(pri(x[i]), -1) for i in range(3)]
    rec = (enc(x) - x).pow(2).mean()
'''

LOOPS = '''\
    series_loss = 0.0
    for u in range(len(prior)):
        series_loss += kl(series[u], prior[u].detach()) + kl(prior[u].detach(), series[u])
    prior_loss = 0.0
    for u in range(len(prior)):
        prior_loss += kl(series[u].detach(), prior[u]) + kl(prior[u], series[u].detach())
'''

TAIL = '''\
    series_loss = series_loss / len(prior)
    prior_loss = prior_loss / len(prior)
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
'''

SRC = HEAD + LOOPS + TAIL


def _fixed(src: str) -> str:
    """The file after `gradfix fix` (every pass), safe fixes only."""
    return api.fix_source(src, "train.py", api.Options(select=("GF001", "GF003", "GF004"))).source


def _exact(src: str, fixed: str) -> None:
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(src, fixed, filename="train.py", device="cpu", repeat=0)
    assert report.error is None
    assert [r.key for r in report.rows if not r.ok] == []


def test_both_pairs_found_and_fused_exactly():
    result = _lint(SRC, ["GF004"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(25, 23, True), (25, 58, True)]
    assert "(two loops over one range: the second reads the first's evaluations)" in result.findings[0].message
    _exact(SRC, _fixed(SRC))


def test_expected_text():
    fixed = _fixed(SRC)
    assert "from gradfix.autograd import grad_scale\n" in fixed
    assert (
        "    series_loss = 0.0\n"
        "    kl_values = []\n"
        "    kl_values_2 = []\n"
        "    for u in range(len(prior)):\n"
        "        kl_shared = kl(series[u], grad_scale(prior[u], -1.0))\n"
        "        kl_values.append(kl_shared.detach())\n"
        "        kl_shared_2 = kl(grad_scale(prior[u], -1.0), series[u])\n"
        "        kl_values_2.append(kl_shared_2.detach())\n"
        "        series_loss += kl_shared + kl_shared_2\n"
        "    prior_loss = 0.0\n"
        "    for u in range(len(prior)):\n"
        "        prior_loss += kl_values[u] + kl_values_2[u]\n"
    ) in fixed
    assert fixed.endswith("    (loss1 + loss2).backward()\n")


@pytest.mark.parametrize(
    "loops",
    [
        # the second loop's term is the one that carries the evaluation (the ratio would divide by K)
        LOOPS.replace("series_loss += kl(series[u], prior[u].detach()) + kl(prior[u].detach(), series[u])",
                      "series_loss += K * kl(series[u], prior[u].detach())").replace(
            "prior_loss += kl(series[u].detach(), prior[u]) + kl(prior[u], series[u].detach())",
            "prior_loss += kl(series[u].detach(), prior[u])"),
        # statements between the loops, and other statements in the bodies
        LOOPS.replace("    prior_loss = 0.0\n", "    log.append(len(prior))\n    prior_loss = 0.0\n").replace(
            "        series_loss += kl(", "        w = u * 0.5\n        log.append(w)\n        series_loss += kl("),
        # the terms stand alone and are added afterwards (copies keep them apart)
        LOOPS.replace("        series_loss += kl(series[u], prior[u].detach()) + kl(prior[u].detach(), series[u])\n",
                      "        t = kl(series[u], prior[u].detach())\n        series_loss += t\n").replace(
            "        prior_loss += kl(series[u].detach(), prior[u]) + kl(prior[u], series[u].detach())\n",
            "        t2 = kl(series[u].detach(), prior[u])\n        prior_loss += t2\n"),
        # zero tensors as the sums' start, `s = s + e`
        LOOPS.replace("series_loss = 0.0", "series_loss = torch.zeros(())").replace("prior_loss = 0.0", "prior_loss = torch.zeros(())").replace(
            "prior_loss += kl(series[u].detach(), prior[u]) + kl(prior[u], series[u].detach())",
            "prior_loss = prior_loss + kl(series[u].detach(), prior[u]) + kl(prior[u], series[u].detach())"),
        # one backward of one loss (the summed form through two loops)
        LOOPS,
    ],
    ids=["carried_by_second", "statements_around", "bare_terms", "tensor_sums", "one_loss"],
)
def test_variants_are_exact(loops):
    tail = TAIL if loops is not LOOPS else TAIL.replace(
        "    loss1.backward(retain_graph=True)\n    loss2.backward()\n", "    (loss1 * 0.5 + loss2 * 2).backward()\n"
    )
    src = HEAD + loops + tail
    result = _lint(src, ["GF004"])
    assert result.findings and all(f.fixable for f in result.findings), [f.message for f in result.findings]
    fixed = _fixed(src)
    assert "_values = []" in fixed
    if "t2 = " in src:  # a term standing alone: the list keeps a copy, not a view of the evaluation
        assert "        kl_values.append(kl_shared.detach().clone())\n" in fixed
    _exact(src, fixed)


@pytest.mark.parametrize(
    "old,new",
    [
        # another range in the second loop
        ("    for u in range(len(prior)):\n        prior_loss",
         "    for u in range(len(series)):\n        prior_loss"),
        # another loop name
        ("    for u in range(len(prior)):\n        prior_loss += kl(series[u].detach(), prior[u]) + kl(prior[u], series[u].detach())",
         "    for v in range(len(prior)):\n        prior_loss += kl(series[v].detach(), prior[v]) + kl(prior[v], series[v].detach())"),
        # a range that does not start at 0: item u is not iteration u's
        ("for u in range(len(prior))", "for u in range(0, len(prior))"),
        # an iterator: the second loop may see other items
        ("for u in range(len(prior))", "for u in iter(range(len(prior)))"),
    ],
    ids=["other_range", "other_name", "range_start", "iterator"],
)
def test_loops_that_may_not_run_alike_are_not_fused(old, new):
    assert old in SRC
    src = SRC.replace(old, new)
    assert _lint(src, ["GF004"], unsafe=True).findings == []


@pytest.mark.parametrize(
    "old,new",
    [
        # an operand changed between the loops
        ("    prior_loss = 0.0\n", "    prior[0] = prior[0] * 0.5\n    prior_loss = 0.0\n"),
        # the list the bound reads grows between the loops
        ("    prior_loss = 0.0\n", "    prior.append(prior[0])\n    prior_loss = 0.0\n"),
        # an operand changed inside the first loop, after the term
        ("        series_loss += kl(series[u], prior[u].detach()) + kl(prior[u].detach(), series[u])\n",
         "        series_loss += kl(series[u], prior[u].detach()) + kl(prior[u].detach(), series[u])\n        series[u] = series[u] * 1.0\n"),
        # the loop name rebound in the body
        ("        series_loss += kl(series[u], prior[u].detach()) + kl(prior[u].detach(), series[u])\n",
         "        series_loss += kl(series[u], prior[u].detach()) + kl(prior[u].detach(), series[u])\n        u = 0\n"),
    ],
    ids=["operand_between", "bound_grows", "operand_in_first_loop", "name_rebound"],
)
def test_what_changes_the_operands_keeps_it_out(old, new):
    assert old in SRC
    src = SRC.replace(old, new)
    assert _lint(src, ["GF004"], unsafe=True).findings == []


def test_precheck_lets_two_loops_with_one_detach_each_through():
    from gradfix.rules import gf004_detached_terms_across_losses as rule

    src = (HEAD + LOOPS.replace(" + kl(prior[u].detach(), series[u])", "").replace(" + kl(prior[u], series[u].detach())", "") + TAIL).encode()
    assert src.count(b".detach()") == 2
    assert rule.might_match(src, src, {})
    assert _lint(src.decode(), ["GF004"]).findings
    # one loop with one `.detach()`, and nothing else: still provably no pair (ruled out by the
    # token stage's `prechecks.two_stop_gradients`)
    from gradfix.engine import prefilter

    one = src.replace(b"prior[u].detach()", b"prior[u]")
    assert prefilter(one, [rule]) == []


def test_fused_through_a_loss_module():
    # `crit = nn.KLDivLoss(...)`: the sums add what a module returns; they stay numbers and tensors
    # of their own (no alias of the operands), so the loops are fused.
    src = (HEAD.replace("log = []\n", "log = []\ncrit = nn.L1Loss(reduction='sum')\n") + LOOPS.replace(
        "series_loss += kl(series[u], prior[u].detach()) + kl(prior[u].detach(), series[u])", "series_loss += crit(series[u], prior[u].detach())"
    ).replace("prior_loss += kl(series[u].detach(), prior[u]) + kl(prior[u], series[u].detach())", "prior_loss += crit(series[u].detach(), prior[u])") + TAIL)
    result = _lint(src, ["GF004"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    assert "crit_values = []" in result.fixed.decode()
    _exact(src, _fixed(src))
