"""GF004 through comprehensions over sequences (issue 12: "comprehensions over iterators").

Two reduced comprehensions with one clause over names, `for s, p in zip(series, prior)` (or
`enumerate(...)`, or a name), are fused like those over `range(...)`: the one evaluation is a list,
one element per iteration. Iterating again gives the same items only where each name holds a list
or a tuple: an iterator is exhausted by the original's first comprehension, and the second then
sums nothing. The fix is safe only where the function's bindings prove lists or tuples; both
cases are executed here.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact, _unsafe_fix_is_exact

SRC = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Linear(5, 5)
xin = torch.randn(3, 6, 5)


def kl(p, q):
    return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1)


def step():
    h = net(xin)
    series = [torch.softmax(h[i], -1) for i in range(3)]
    prior = [torch.softmax(h[i] * 2.0, -1) for i in range(3)]
    rec = h.pow(2).mean()
    series_loss = sum(torch.mean(kl(s, p.detach())) for s, p in zip(series, prior))
    prior_loss = sum(torch.mean(kl(s.detach(), p)) for s, p in zip(series, prior))
    loss1 = rec - 3.0 * series_loss
    loss2 = rec + 3.0 * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
'''

FIXED = '''\
    kl_shared = [torch.mean(kl(s, grad_scale(p, -1.0))) for s, p in zip(series, prior)]
    series_loss = sum(kl_shared)
    prior_loss = sum([v.detach() for v in kl_shared])
    loss1 = rec - 3.0 * series_loss
    loss2 = rec + 3.0 * prior_loss
    (loss1 + loss2).backward()
'''


def test_zip_over_lists_is_fused_and_exact():
    result = _lint(SRC, ["GF004"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(19, 22, True)], [f.message for f in result.findings]
    assert FIXED in result.fixed.decode()
    _safe_fix_is_exact(SRC, ["GF004"])


CLAUSES = {
    "enumerate_zip": ("for s, p in zip(series, prior)", "for i, (s, p) in enumerate(zip(series, prior))"),
    "tuples": ("[torch.softmax(h[i], -1) for i in range(3)]", "tuple(torch.softmax(h[i], -1) for i in range(3))"),
    "unpacked_displays": (
        "    series = [torch.softmax(h[i], -1) for i in range(3)]\n    prior = [torch.softmax(h[i] * 2.0, -1) for i in range(3)]\n",
        "    series, prior = [], []\n    for i in range(3):\n        series.append(torch.softmax(h[i], -1))\n        prior.append(torch.softmax(h[i] * 2.0, -1))\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CLAUSES))
def test_other_clauses_over_proven_sequences(case):
    old, new = CLAUSES[case]
    assert old in SRC
    src = SRC.replace(old, new)
    result = _lint(src, ["GF004"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    _safe_fix_is_exact(src, ["GF004"])


def test_lists_from_elsewhere_are_unsafe_and_exact_when_lists():
    src = SRC.replace("def step():\n    h = net(xin)\n", "def maps(h):\n    return [torch.softmax(h[i], -1) for i in range(3)], [torch.softmax(h[i] * 2.0, -1) for i in range(3)]\n\n\ndef step():\n    h = net(xin)\n").replace(
        "    series = [torch.softmax(h[i], -1) for i in range(3)]\n    prior = [torch.softmax(h[i] * 2.0, -1) for i in range(3)]\n",
        "    series, prior = maps(h)\n",
    )
    result = _lint(src, ["GF004"])
    (finding,) = result.findings
    assert not finding.fixable
    assert "`series` and `prior` may be iterators, which the original's first comprehension exhausts" in finding.message
    _unsafe_fix_is_exact(src, ["GF004"])


def test_an_iterator_is_why():
    """A generator is exhausted by the first comprehension: the original's second sum is 0, and the
    rewrite, which iterates once, differs. Not proven a sequence, so the fix is unsafe."""
    src = SRC.replace("series = [torch.softmax(h[i], -1) for i in range(3)]", "series = (torch.softmax(h[i], -1) for i in range(3))")
    result = _lint(src, ["GF004"], unsafe=True)
    (finding,) = result.findings
    assert not finding.fixable and "`series` may be an iterator" in finding.message, finding.message
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(src, result.fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is None and [r.key for r in report.rows if not r.ok]  # the rewrite differs


@pytest.mark.parametrize(
    "old,new",
    [
        # the list changes between the comprehensions: they iterate other items
        ("    prior_loss = sum(", "    series.append(series[0] * 0.5)\n    prior_loss = sum("),
        # a condition: not every item
        ("for s, p in zip(series, prior))\n    loss1", "for s, p in zip(series, prior) if s.sum() > 0)\n    loss1"),
        # clauses written differently
        ("torch.mean(kl(s.detach(), p)) for s, p in zip(series, prior)", "torch.mean(kl(s.detach(), p)) for s, p in zip(series, prior[::-1])"),
    ],
    ids=["append_between", "condition", "other_clause"],
)
def test_near_misses_get_no_safe_fix(old, new):
    assert old in SRC
    result = _lint(SRC.replace(old, new), ["GF004"])
    assert all(not f.fixable for f in result.findings), [f.message for f in result.findings]
