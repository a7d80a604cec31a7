"""Stop-gradient spellings beyond `.detach()` (issue 12): `.detach().clone()`, `.clone().detach()`,
`.clone().detach_()`. Each is found, rewritten to the same `grad_scale` form as `.detach()`, and the
rewrite is executed against the original. `x.detach_()` alone detaches `x` itself: not a marker.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

GF001 = '''\
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def step():
    x, y = a * 2, b * 3
    l1 = F.mse_loss({X}, y)
    l1.backward(retain_graph=True)
    l2 = -F.mse_loss(x, {Y})
    l2.backward()
'''

SPELLINGS = {
    "detach_clone": ("x.detach().clone()", "y.detach().clone()"),
    "clone_detach": ("x.clone().detach()", "y.clone().detach()"),
    "clone_detach_inplace": ("x.clone().detach_()", "y.detach()"),
    "mixed": ("x.detach().clone()", "y.clone().detach()"),
    "torch_detach": ("torch.detach(x)", "torch.detach(y)"),
    "torch_detach_and_method": ("torch.detach(x)", "y.detach()"),
    "torch_detach_of_clone": ("torch.detach(x.clone())", "y.detach()"),
}


@pytest.mark.parametrize("case", sorted(SPELLINGS))
def test_spelling_is_found_and_fixed_exactly(case):
    x, y = SPELLINGS[case]
    src = GF001.format(X=x, Y=y)
    result = _lint(src, ["GF001"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(12, 11, True)]
    fixed = result.fixed.decode()
    assert "    l1 = F.mse_loss(grad_scale(x, -1.0), y)\n    l1.backward()\n" in fixed
    assert "clone" not in fixed
    _safe_fix_is_exact(src, ["GF001"])


@pytest.mark.parametrize(
    "x", ["x.detach_()", "x.clone()", "x.detach().add(0)", "torch.detach(x, y)", "torch.detach(input=x)", "np.detach(x)"]
)
def test_other_spellings_are_not_stop_gradients(x):
    src = GF001.format(X=x, Y="y.detach()")
    assert _lint(src, ["GF001"]).findings == []


GF002 = '''\
import torch
import torch.nn.functional as F

BETA = 0.25
z_e0 = torch.randn(8, 4, requires_grad=True)
z_q0 = torch.randn(8, 4, requires_grad=True)


def step():
    z_e, z_q = z_e0 * 2, z_q0 * 3
    loss = F.mse_loss(z_q, z_e.detach().clone()) + BETA * F.mse_loss(z_q.clone().detach(), z_e)
    loss.backward()
'''


def test_summed_form_with_copying_spellings():
    result = _lint(GF002, ["GF002"])
    assert [(f.line, f.fixable) for f in result.findings] == [(11, True)]
    _safe_fix_is_exact(GF002, ["GF002"])


def test_summed_form_with_torch_detach():
    src = GF002.replace("z_e.detach().clone()", "torch.detach(z_e)").replace("z_q.clone().detach()", "torch.detach(z_q)")
    result = _lint(src, ["GF002"])
    assert [(f.line, f.fixable) for f in result.findings] == [(11, True)]
    assert "torch.detach" not in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF002"])
