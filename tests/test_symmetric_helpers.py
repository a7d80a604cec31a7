"""Helpers of the file that are symmetric by construction may take their arguments swapped (issue 12).

`def sym_kl(p, q): return torch.mean(kl(p, q)) + torch.mean(kl(q, p))` gives the
same value and gradients with `p` and `q` exchanged (two summands add alike in
either order), so `sym_kl(P.detach(), S)` and `sym_kl(S.detach(), P)` are one
computation with complementary stop-gradients, as GF001 already knew for
`F.mse_loss`. Found, rewritten and executed; helpers that are not symmetric in
exactly that form are not paired swapped.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

GF004 = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Linear(4, 4)
xin = torch.randn(3, 2, 4)


def kl(p, q):
    res = p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))
    return torch.mean(torch.sum(res, dim=-1), dim=1)


{HELPER}


def step():
    out = torch.softmax(net(xin), -1)
    series = [out, out * 0.5 + 0.25]
    prior = [torch.softmax(net(xin) * 2, -1), torch.softmax(net(xin) * 3, -1)]
    rec = out.pow(2).mean()
    series_loss, prior_loss = 0.0, 0.0
    for u in range(len(prior)):
        series_loss += sym_kl(prior[u].detach(), series[u])
        prior_loss += sym_kl(series[u].detach(), prior[u])
    loss1 = rec - 3.0 * series_loss
    loss2 = rec + 3.0 * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
'''

SYMMETRIC = {
    "def": "def sym_kl(p, q):\n    return torch.mean(kl(p, q)) + torch.mean(kl(q, p))",
    "def_docstring": 'def sym_kl(p, q):\n    """Symmetrised KL."""\n    return torch.mean(kl(p, q)) + torch.mean(kl(q, p))',
    "lambda": "sym_kl = lambda a, b: kl(a, b).mean() + kl(b, a).mean()",
    "products": "def sym_kl(p, q):\n    return (p.log() * q).mean() + (q.log() * p).mean()",
}

NOT_SYMMETRIC = {
    "difference": "def sym_kl(p, q):\n    return torch.mean(kl(p, q)) - torch.mean(kl(q, p))",
    "weighted": "def sym_kl(p, q):\n    return torch.mean(kl(p, q)) + 2.0 * torch.mean(kl(q, p))",
    "same_order": "def sym_kl(p, q):\n    return torch.mean(kl(p, q)) + torch.mean(kl(p, q))",
    "three_summands": "def sym_kl(p, q):\n    return torch.mean(kl(p, q)) + torch.mean(kl(q, p)) + p.mean()",
    "default": "def sym_kl(p, q, w=1.0):\n    return torch.mean(kl(p, q)) + torch.mean(kl(q, p))",
    "two_statements": "def sym_kl(p, q):\n    d = torch.mean(kl(p, q))\n    return d + torch.mean(kl(q, p))",
    # a comprehension rebinding `p`: exchanging the names is not exchanging the arguments
    "shadowed": "def sym_kl(p, q):\n    return sum(torch.mean(kl(p, q)) for p in [q]) + sum(torch.mean(kl(q, p)) for q in [p])",
}


@pytest.mark.parametrize("case", sorted(SYMMETRIC))
def test_symmetric_helper_pairs_swapped_and_is_exact(case):
    src = GF004.replace("{HELPER}", SYMMETRIC[case])
    result = _lint(src, ["GF004"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(src.count("\n", 0, src.index("        prior_loss +=")) + 1, 23, True)]
    assert result.findings[0].message.endswith("(arguments swapped; the callee is symmetric)")
    fixed = result.fixed.decode()
    assert "        sym_kl_shared = sym_kl(grad_scale(prior[u], -1.0), series[u])\n" in fixed
    assert "        prior_loss += sym_kl_shared.detach()\n" in fixed
    _safe_fix_is_exact(src, ["GF004"])


@pytest.mark.parametrize("case", sorted(NOT_SYMMETRIC))
def test_other_helpers_are_not_paired_swapped(case):
    src = GF004.replace("{HELPER}", NOT_SYMMETRIC[case])
    assert _lint(src, ["GF004"], unsafe=True).findings == []


def test_a_swapped_pair_of_an_asymmetric_helper_would_differ():
    # Why the form is required: pairing `weighted` swapped gives other gradients.
    src = GF004.replace("{HELPER}", NOT_SYMMETRIC["weighted"])
    would_be = src.replace("import torch\n", "import torch\nfrom gradfix.autograd import grad_scale\n", 1).replace(
        "        series_loss += sym_kl(prior[u].detach(), series[u])\n        prior_loss += sym_kl(series[u].detach(), prior[u])\n",
        "        shared = sym_kl(grad_scale(prior[u], -1.0), series[u])\n        series_loss += shared\n        prior_loss += shared.detach()\n",
    ).replace("    loss1.backward(retain_graph=True)\n    loss2.backward()\n", "    (loss1 + loss2).backward()\n")
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(src, would_be, filename="train.py", device="cpu", repeat=0)
    assert report.error is None, report.error
    assert [r.key for r in report.rows if not r.ok]


GF001 = '''\
import torch

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def sym_dist(u, v):
    return (u * v.tanh()).sum() + (v * u.tanh()).sum()


def step():
    x, y = a * 2, b * 3
    l1 = sym_dist(y.detach(), x)
    l1.backward(retain_graph=True)
    l2 = -sym_dist(x.detach(), y)
    l2.backward()
'''


def test_gf001_with_a_symmetric_helper_swapped():
    result = _lint(GF001, ["GF001"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(15, 11, True)]
    _safe_fix_is_exact(GF001, ["GF001"])
