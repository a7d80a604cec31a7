"""A list stop-gradiented item by item, `[p.detach() for p in prior]` (issue 12: the association
discrepancy computed by a helper of several statements, with a loop inside).

    series_loss = association_discrepancy(series, [p.detach() for p in prior])
    prior_loss = association_discrepancy([s.detach() for s in series], prior)

is the pattern with lists of tensors as operands: one evaluation with `grad_scale(prior, -1.0)`
(`grad_scale` scales every tensor of a list). Exact when iterating the operand twice gives the
same items: proven for a name bound only to list or tuple displays, list comprehensions or
`list(...)`/`tuple(...)`; otherwise the fix is unsafe (an iterator would give the second
evaluation other items). Every rewrite here is executed against the original.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact, _unsafe_fix_is_exact

SRC = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
K = 3.0


def kl(p, q):
    return (p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))).sum(-1).mean()


def association_discrepancy(series, prior):
    total = 0.0
    for u in range(len(prior)):
        total = total + kl(series[u], prior[u]) + kl(prior[u], series[u])
    return total / len(prior)


def model(inp):
    return [torch.softmax(enc(inp[i]), -1) for i in range(3)], [torch.softmax(pri(inp[i]), -1) for i in range(3)]


def step():
    series = [torch.softmax(enc(x[i]), -1) for i in range(3)]
    prior = [torch.softmax(pri(x[i]), -1) for i in range(3)]
    rec = (enc(x) - x).pow(2).mean()
    series_loss = association_discrepancy(series, [p.detach() for p in prior])
    prior_loss = association_discrepancy([s.detach() for s in series], prior)
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
'''


def test_found_and_exact():
    result = _lint(SRC, ["GF004"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(31, 18, True)]
    fixed = result.fixed.decode()
    assert (
        "    association_discrepancy_shared = association_discrepancy(series, grad_scale(prior, -1.0))\n"
        "    series_loss = association_discrepancy_shared\n"
        "    prior_loss = association_discrepancy_shared.detach().clone()\n"
    ) in fixed
    _safe_fix_is_exact(SRC, ["GF004"])


def test_gf001_spelling_is_exact():
    src = SRC.replace(
        "    series_loss = association_discrepancy(series, [p.detach() for p in prior])\n"
        "    prior_loss = association_discrepancy([s.detach() for s in series], prior)\n"
        "    loss1 = rec - K * series_loss\n"
        "    loss2 = rec + K * prior_loss\n"
        "    loss1.backward(retain_graph=True)\n"
        "    loss2.backward()\n",
        "    l1 = -K * association_discrepancy(series, [torch.detach(p) for p in prior])\n"
        "    l1.backward(retain_graph=True)\n"
        "    l2 = K * association_discrepancy([s.detach().clone() for s in series], prior)\n"
        "    l2.backward()\n",
    )
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    assert "    l1 = association_discrepancy(grad_scale(series, -K), grad_scale(prior, K))\n" in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF001"])


def test_an_operand_not_proven_a_sequence_makes_the_fix_unsafe():
    # Bound by tuple unpacking of a call: the model could return iterators.
    src = SRC.replace(
        "    series = [torch.softmax(enc(x[i]), -1) for i in range(3)]\n    prior = [torch.softmax(pri(x[i]), -1) for i in range(3)]\n",
        "    series, prior = model(x)\n",
    )
    result = _lint(src, ["GF004"])
    assert [f.fixable for f in result.findings] == [False]
    assert (
        "`prior` is stop-gradiented item by item: gradfix cannot prove it a list or tuple "
        "(an iterator would give the second evaluation other items)"
    ) in result.findings[0].message
    _unsafe_fix_is_exact(src, ["GF004"])  # (lists in fact)


def test_with_iterators_the_merge_would_differ():
    # What the reason is for: iterators give the second evaluation nothing (the original's second
    # loss is 0), while the merged evaluation sees the items once.
    harness = pytest.importorskip("gradfix.harness")
    src = SRC.replace(
        "    series = [torch.softmax(enc(x[i]), -1) for i in range(3)]\n    prior = [torch.softmax(pri(x[i]), -1) for i in range(3)]\n",
        "    series, prior = model(x)\n    series, prior = iter(series), iter(prior)\n",
    ).replace("    for u in range(len(prior)):\n        total = total + kl(series[u], prior[u]) + kl(prior[u], series[u])\n    return total / len(prior)\n",
              "    for s, p in zip(series, prior):\n        total = total + kl(s, p) + kl(p, s)\n    return total\n")
    result = _lint(src, ["GF004"], unsafe=True)
    assert [f.fixable for f in result.findings] == [False]
    report = harness.verify_pair(src, result.fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is not None or any(not r.ok for r in report.rows)


@pytest.mark.parametrize(
    "old,new",
    [
        # a condition in the comprehension: not every item
        ("[p.detach() for p in prior]", "[p.detach() for p in prior if p.numel()]"),
        # the item is not the clause's own name
        ("[p.detach() for p in prior]", "[series[0].detach() for p in prior]"),
        # two clauses
        ("[p.detach() for p in prior]", "[p.detach() for q in [prior] for p in q]"),
    ],
    ids=["condition", "other_item", "two_clauses"],
)
def test_other_comprehensions_are_not_stop_gradients(old, new):
    src = SRC.replace(old, new)
    assert _lint(src, ["GF004"], unsafe=True).findings == []
