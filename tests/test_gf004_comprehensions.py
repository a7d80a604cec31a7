"""GF004 through reduced comprehensions (issue 12): `sum([...])`, `sum(generator)`, `torch.stack([...]).mean()`.

Two comprehensions with the same `for u in range(...)` clause in one block are
fused: the one evaluation is a list built where the first was, the carrying
comprehension becomes that list and the other its detached elements. Every
rewrite here is executed against the original. Clauses that may not give the
same iterations twice (bounds that call something, an operand rebound in
between) are not followed; a clause over names (`zip(series, prior)`) is
followed, safe only where they are proven lists or tuples
(tests/test_gf004_iterated_comprehensions.py).
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
    series_loss = sum([torch.mean(kl(series[u], prior[u].detach())) for u in range(len(prior))]) / len(prior)
    prior_loss = sum([torch.mean(kl(series[u].detach(), prior[u])) for u in range(len(prior))]) / len(prior)
    loss1 = rec - 3.0 * series_loss
    loss2 = rec + 3.0 * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
'''

S = "    series_loss = sum([torch.mean(kl(series[u], prior[u].detach())) for u in range(len(prior))]) / len(prior)\n"
P = "    prior_loss = sum([torch.mean(kl(series[u].detach(), prior[u])) for u in range(len(prior))]) / len(prior)\n"


def _both(s: str, p: str) -> str:
    return SRC.replace(S, s).replace(P, p)


GEN_S = "    series_loss = sum(torch.mean(kl(series[u], prior[u].detach())) for u in range(len(prior)))\n"
GEN_P = "    prior_loss = sum(torch.mean(kl(series[u].detach(), prior[u])) for u in range(len(prior)))\n"
STACK_S = "    series_loss = torch.stack([torch.mean(kl(series[u], prior[u].detach())) for u in range(len(prior))]).mean()\n"
STACK_P = "    prior_loss = torch.stack([torch.mean(kl(series[u].detach(), prior[u])) for u in range(len(prior))]).mean()\n"

VARIANTS = {
    "list_sum": SRC,
    "generator_sum": _both(GEN_S, GEN_P),
    "stack_mean": _both(STACK_S, STACK_P),
    "torch_mean_of_stack": _both(
        "    series_loss = torch.mean(torch.stack([torch.mean(kl(series[u], prior[u].detach())) for u in range(len(series))]))\n",
        "    prior_loss = torch.mean(torch.stack([torch.mean(kl(series[u].detach(), prior[u])) for u in range(len(series))]))\n",
    ),
    "stack_sum_with_step": _both(
        "    series_loss = torch.stack([torch.mean(kl(series[u], prior[u].detach())) for u in range(0, len(prior), 2)]).sum()\n",
        "    prior_loss = torch.stack([torch.mean(kl(series[u].detach(), prior[u])) for u in range(0, len(prior), 2)]).sum()\n",
    ),
    # The second loss's terms first: the one evaluation is the first comprehension's, still.
    "prior_first": SRC.replace(S + P, P + S),
    # One loss (DCdetector's way), both sums reaching it.
    "one_loss": SRC.replace(
        "    loss1 = rec - 3.0 * series_loss\n    loss2 = rec + 3.0 * prior_loss\n    loss1.backward(retain_graph=True)\n    loss2.backward()\n",
        "    loss = rec + prior_loss - series_loss\n    loss.backward()\n",
    ),
    # Both in one statement.
    "one_statement": SRC.replace(
        S + P,
        "    series_loss, prior_loss = (\n"
        "        sum([torch.mean(kl(series[u], prior[u].detach())) for u in range(len(prior))]),\n"
        "        sum([torch.mean(kl(series[u].detach(), prior[u])) for u in range(len(prior))]),\n"
        "    )\n",
    ),
    # Something harmless between the two.
    "logging_between": SRC.replace(S, S + "    print(float(series_loss))\n"),
}


def test_fused_rewrite():
    result = _lint(SRC, ["GF004"])
    assert [(f.code, f.line, f.col, f.fixable) for f in result.findings] == [("GF004", 20, 23, True)]
    assert result.findings[0].message.startswith("`kl` evaluated twice with complementary `.detach()` (line 19, in `loss1`, and here, in `loss2`)")
    fixed = result.fixed.decode()
    assert (
        "    kl_shared = [torch.mean(kl(series[u], grad_scale(prior[u], -1.0))) for u in range(len(prior))]\n"
        "    series_loss = sum(kl_shared) / len(prior)\n"
        "    prior_loss = sum([v.detach() for v in kl_shared]) / len(prior)\n"
    ) in fixed
    assert "    (loss1 + loss2).backward()\n" in fixed


@pytest.mark.parametrize("case", sorted(VARIANTS))
def test_variants_are_found_and_exact(case):
    src = VARIANTS[case]
    result = _lint(src, ["GF004"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    assert "for v in kl_shared]" in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF004"])
    # The fixed file is a fixed point.
    assert _lint(result.fixed.decode(), ["GF001", "GF003", "GF004"], unsafe=True).findings == []


NOT_FOLLOWED = {
    # different iterations
    "different_clauses": (P, P.replace("range(len(prior))", "range(len(series))")),
    # (clauses over `zip(series, prior)`: tests/test_gf004_iterated_comprehensions.py)
    # bounds that call something
    "called_bound": (S + P, (S + P).replace("range(len(prior))", "range(int(len(prior)))")),
    # a condition
    "if_clause": (S + P, (S + P).replace("range(len(prior))]", "range(len(prior)) if u > 0]")),
    # the operand list rebound between them: the second sees other tensors
    "rebound_between": (P, "    prior = prior[::-1]\n" + P),
    # mixed reductions: the ratio would carry the iteration count
    "sum_and_mean": (S + P, GEN_S + STACK_P),
    # an element of two terms (the fused form takes one term per element)
    # an element of several parts over a range whose items are not their positions
    "parts_not_positions": (
        S + P,
        "    series_loss = sum([0.5 * torch.mean(kl(series[u], prior[u].detach())) for u in range(1, len(prior))])\n"
        "    prior_loss = sum([0.5 * torch.mean(kl(series[u].detach(), prior[u])) for u in range(1, len(prior))])\n",
    ),
}


@pytest.mark.parametrize("case", sorted(NOT_FOLLOWED))
def test_shapes_not_proven_are_not_gf004(case):
    old, new = NOT_FOLLOWED[case]
    assert old in SRC
    src = SRC.replace(old, new)
    assert _lint(src, ["GF004"], unsafe=True).findings == []
    _safe_fix_is_exact(src, ["GF001", "GF003", "GF004"])


TWO_TERMS = SRC.replace(
    S + P,
    "    series_loss = sum([torch.mean(kl(series[u], prior[u].detach())) + torch.mean(kl(prior[u].detach(), series[u]))"
    " for u in range(len(prior))])\n"
    "    prior_loss = sum(torch.mean(kl(prior[u], series[u].detach())) + torch.mean(kl(series[u].detach(), prior[u]))"
    " for u in range(len(prior)))\n",
)


def test_elements_of_several_terms_are_indexed_and_exact():
    # The anomaly transformer's symmetrised discrepancy, as comprehensions: each pair takes its
    # iteration's item of one list (`kl_shared[u]`); the second pair is fixed in the next pass.
    result = _lint(TWO_TERMS, ["GF004"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(20, 22, True), (20, 69, True)]
    fixed = result.fixed.decode()
    assert (
        "    kl_shared = [torch.mean(kl(series[u], grad_scale(prior[u], -1.0))) for u in range(len(prior))]\n"
        "    kl_shared_2 = [torch.mean(kl(grad_scale(prior[u], -1.0), series[u])) for u in range(len(prior))]\n"
        "    series_loss = sum([kl_shared[u] + kl_shared_2[u] for u in range(len(prior))])\n"
        "    prior_loss = sum(kl_shared_2[u].detach() + kl_shared[u].detach() for u in range(len(prior)))\n"
    ) in fixed
    _safe_fix_is_exact(TWO_TERMS, ["GF004"])
    assert _lint(fixed, ["GF001", "GF003", "GF004"], unsafe=True).findings == []


def test_an_exhausted_iterator_is_why_iterated_clauses_need_a_proof():
    # With `pairs = zip(...)` shared by both, the second comprehension sums nothing: fusing would
    # give `prior_loss` the first's values. Found, but `pairs` is no proven list: unsafe.
    src = SRC.replace(
        S + P,
        "    pairs = zip(series, prior)\n"
        "    series_loss = sum([torch.mean(kl(s, p.detach())) for s, p in pairs])\n"
        "    prior_loss = sum([torch.mean(kl(s.detach(), p)) for s, p in pairs])\n",
    )
    (finding,) = _lint(src, ["GF004"], unsafe=True).findings
    assert not finding.fixable and "`pairs` may be an iterator" in finding.message, finding.message
    fused = src.replace("import torch\n", "import torch\nfrom gradfix.autograd import grad_scale\n", 1).replace(
        "    series_loss = sum([torch.mean(kl(s, p.detach())) for s, p in pairs])\n"
        "    prior_loss = sum([torch.mean(kl(s.detach(), p)) for s, p in pairs])\n",
        "    kl_shared = [torch.mean(kl(s, grad_scale(p, -1.0))) for s, p in pairs]\n"
        "    series_loss = sum(kl_shared)\n"
        "    prior_loss = sum([v.detach() for v in kl_shared])\n",
    )
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(src, fused, filename="train.py", device="cpu", repeat=0)
    assert report.error is None, report.error
    assert [r.key for r in report.rows if not r.ok], "expected fusing an exhausted iterator to change a value"
