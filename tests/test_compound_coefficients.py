"""Compound coefficients (issue 12): `(1 - beta) * f(...)`, `(beta + 0.5) * f(...)` are coefficients.

A sum or difference of numbers and names bound once to numbers is a
coefficient like a product of them: the pair is found, rewritten with the sum
(`grad_scale(z_q, 1.0 - BETA)`) and executed against the original. A sum that
holds a name not proven a number keeps the fix unsafe.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact
from tests.test_receiver_pairs import VQ

CASES = {
    "one_minus_beta": ("(1 - BETA) * F.mse_loss(z_q, z.detach()) + BETA * F.mse_loss(z_q.detach(), z)", "grad_scale(z_q, 1.0 - BETA)"),
    "beta_plus_half": ("F.mse_loss(z_q, z.detach()) + (BETA + 0.5) * F.mse_loss(z_q.detach(), z)", "grad_scale(z, 0.5 + BETA))\n    loss = loss_term + ((0.5 + BETA) * loss_term).detach()"),
    "negated_difference": ("F.mse_loss(z_q, z.detach()) - (2 - BETA) * F.mse_loss(z_q.detach(), z)", "grad_scale(z, -2.0 + BETA)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compound_coefficients_are_found_and_exact(case):
    terms, expected = CASES[case]
    src = VQ.replace("import torch\n", "import torch\nimport torch.nn.functional as F\n", 1).replace("{TERMS}", terms)
    result = _lint(src, ["GF002"])
    assert [(f.code, f.line, f.fixable) for f in result.findings] == [("GF002", 15, True)]
    assert expected in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF002"])


def test_a_sum_with_a_tensor_is_not_proven_a_number():
    src = (
        VQ.replace("import torch\n", "import torch\nimport torch.nn.functional as F\n", 1)
        .replace("BETA = 0.25\n", "BETA = 0.25\nw = torch.tensor(0.5, requires_grad=True)\n")
        .replace("{TERMS}", "(1 - w) * F.mse_loss(z_q, z.detach()) + BETA * F.mse_loss(z_q.detach(), z)")
    )
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "coefficient `w` is not a number" in result.findings[0].message


GF001 = '''\
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
K = 0.3


def step():
    x, y = a * 2, b * 3
    l1 = (1 - K) * F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -(K + 1) * F.mse_loss(x, y.detach())
    l2.backward()
'''


def test_gf001_with_compound_coefficients():
    result = _lint(GF001, ["GF001"])
    assert [(f.line, f.fixable) for f in result.findings] == [(13, True)]
    _safe_fix_is_exact(GF001, ["GF001"])
