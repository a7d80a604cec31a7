"""GF004 through a loop's `if u == 0: acc = e else: acc += e` (issue 12, anomaly-transformer variants).

The accumulate-with-a-first-iteration idiom: each iteration adds its terms to
what the last reset kept, for every accumulator of the `if` alike. The pair is
found in the accumulating branch and the fix changes both branches the same way;
every rewrite here is executed against the original (resets at the first
iteration, in the middle, either branch first). Shapes the expansion cannot prove
(branches that differ, a test that calls something, terms from before the loop,
an accumulator also updated elsewhere) are not GF004's.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

SRC = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Linear(4, 4)
xin = torch.randn(3, 2, 4)


def kl(p, q):
    res = p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))
    return torch.mean(torch.sum(res, dim=-1), dim=1)


def step():
    out = torch.softmax(net(xin), -1)
    series = [out, out * 0.5 + 0.25, out * 0.25 + 0.375]
    prior = [torch.softmax(net(xin) * s, -1) for s in (2.0, 3.0, 4.0)]
    rec = out.pow(2).mean()
    for u in range(len(prior)):
        if u == 0:
            series_loss = torch.mean(kl(series[u], prior[u].detach()))
            prior_loss = torch.mean(kl(series[u].detach(), prior[u]))
        else:
            series_loss += torch.mean(kl(series[u], prior[u].detach()))
            prior_loss += torch.mean(kl(series[u].detach(), prior[u]))
    series_loss = series_loss / len(prior)
    prior_loss = prior_loss / len(prior)
    loss1 = rec - 3.0 * series_loss
    loss2 = rec + 3.0 * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
'''

FIXED_LOOP = '''\
    for u in range(len(prior)):
        if u == 0:
            kl_shared = torch.mean(kl(series[u], grad_scale(prior[u], -1.0)))
            series_loss = kl_shared
            prior_loss = kl_shared.detach().clone()
        else:
            kl_shared = torch.mean(kl(series[u], grad_scale(prior[u], -1.0)))
            series_loss += kl_shared
            prior_loss += kl_shared.detach()
'''

ACCUMULATE_FIRST = SRC.replace(
    """        if u == 0:
            series_loss = torch.mean(kl(series[u], prior[u].detach()))
            prior_loss = torch.mean(kl(series[u].detach(), prior[u]))
        else:
            series_loss += torch.mean(kl(series[u], prior[u].detach()))
            prior_loss += torch.mean(kl(series[u].detach(), prior[u]))
""",
    """        if u > 0:
            series_loss += torch.mean(kl(series[u], prior[u].detach()))
            prior_loss += torch.mean(kl(series[u].detach(), prior[u]))
        else:
            series_loss = torch.mean(kl(series[u], prior[u].detach()))
            prior_loss = torch.mean(kl(series[u].detach(), prior[u]))
""",
)

VARIANTS = {
    "reset_first": SRC,
    "accumulate_branch_first": ACCUMULATE_FIRST,
    # A reset in the middle discards the first iteration's terms from both sums alike.
    "reset_in_the_middle": SRC.replace("        if u == 0:\n", "        if u == 1:\n").replace(
        "    rec = out.pow(2).mean()\n", "    rec = out.pow(2).mean()\n    series_loss, prior_loss = 0.0, 0.0\n"
    ),
    # One loss, DCdetector's way: both terms reach `loss` through the accumulators.
    "one_loss": SRC.replace(
        "    loss1 = rec - 3.0 * series_loss\n    loss2 = rec + 3.0 * prior_loss\n    loss1.backward(retain_graph=True)\n    loss2.backward()\n",
        "    loss = rec + prior_loss - series_loss\n    loss.backward()\n",
    ),
}


def test_found_in_the_accumulating_branch_and_fixed_in_both():
    result = _lint(SRC, ["GF004"])
    assert [(f.code, f.line, f.col, f.fixable) for f in result.findings] == [("GF004", 25, 27, True)]
    fixed = result.fixed.decode()
    assert FIXED_LOOP in fixed
    assert "    (loss1 + loss2).backward()\n" in fixed


@pytest.mark.parametrize("case", sorted(VARIANTS))
def test_variants_are_found_and_exact(case):
    src = VARIANTS[case]
    result = _lint(src, ["GF004"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    assert "kl_shared.detach()" in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF004"])


def test_the_fixed_file_is_a_fixed_point():
    fixed = _lint(SRC, ["GF004"]).fixed.decode()
    assert _lint(fixed, ["GF001", "GF003", "GF004"], unsafe=True).findings == []


NOT_FOLLOWED = {
    # the branches compute different values
    "branches_differ": ("            series_loss = torch.mean(kl(series[u], prior[u].detach()))\n",
                        "            series_loss = 2.0 * torch.mean(kl(series[u], prior[u].detach()))\n"),
    # a branch mixes `=` and `+=`
    "mixed_branch": ("            prior_loss = torch.mean(kl(series[u].detach(), prior[u]))\n",
                     "            prior_loss += torch.mean(kl(series[u].detach(), prior[u]))\n",
                     "    for u in range(len(prior)):\n", "    prior_loss = 0.0\n    for u in range(len(prior)):\n"),
    # the test calls something (it could differ between the accumulators' fates... or change state)
    "test_calls": ("        if u == 0:\n", "        if int(u) == 0:\n"),
    # an `elif`
    "elif": ("        else:\n", "        elif u > 0:\n"),
    # an accumulator also updated outside the `if`
    "updated_outside": ("    series_loss = series_loss / len(prior)\n", "        series_loss += 0.0\n    series_loss = series_loss / len(prior)\n"),
    # an accumulator that holds a term from before the loop, which a reset would discard
    "terms_before": ("    for u in range(len(prior)):\n",
                     "    series_loss = torch.mean(kl(series[0], prior[0].detach()))\n    for u in range(len(prior)):\n"),
    # the test reads an accumulator
    "test_reads_accumulator": ("        if u == 0:\n", "        if u == 0 or series_loss is None:\n"),
}


@pytest.mark.parametrize("case", sorted(NOT_FOLLOWED))
def test_shapes_not_proven_are_not_gf004(case):
    edits = NOT_FOLLOWED[case]
    src = SRC
    for old, new in zip(edits[::2], edits[1::2]):
        assert old in src
        src = src.replace(old, new, 1)
    assert _lint(src, ["GF004"], unsafe=True).findings == []
    _safe_fix_is_exact(src, ["GF001", "GF003", "GF004"])  # whatever else is offered stays exact


# `series_loss` reset at the second iteration, `prior_loss` never: the first iteration's pair
# reaches the objective through `prior_loss` only, so one evaluation shared by both terms (what the
# fix would write) loses that gradient.
UNEVEN = SRC.replace("        if u == 0:\n", "        if u == 1:\n").replace(
    "            prior_loss = torch.mean(kl(series[u].detach(), prior[u]))\n",
    "            prior_loss += torch.mean(kl(series[u].detach(), prior[u]))\n",
).replace("    for u in range(len(prior)):\n", "    series_loss, prior_loss = 0.0, 0.0\n    for u in range(len(prior)):\n")


def test_sums_reset_unevenly_are_not_gf004_and_the_fix_would_differ():
    assert _lint(UNEVEN, ["GF004"], unsafe=True).findings == []
    shared = "kl_shared = torch.mean(kl(series[u], grad_scale(prior[u], -1.0)))\n"
    would_be = (
        UNEVEN.replace("import torch\n", "import torch\nfrom gradfix.autograd import grad_scale\n", 1)
        .replace("            series_loss = torch.mean(kl(series[u], prior[u].detach()))\n", "            " + shared + "            series_loss = kl_shared\n")
        .replace("            series_loss += torch.mean(kl(series[u], prior[u].detach()))\n", "            " + shared + "            series_loss += kl_shared\n")
        .replace("prior_loss += torch.mean(kl(series[u].detach(), prior[u]))", "prior_loss += kl_shared.detach()")
        .replace("    loss1.backward(retain_graph=True)\n    loss2.backward()\n", "    (loss1 + loss2).backward()\n")
    )
    assert would_be.count("kl_shared.detach()") == 2
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(UNEVEN, would_be, filename="train.py", device="cpu", repeat=0)
    assert report.error is None, report.error
    assert [r.key for r in report.rows if not r.ok], "expected the shared evaluation to change a gradient"
