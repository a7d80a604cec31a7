"""Stop-gradient spellings beyond `.detach()` (issue 12): `.detach().clone()`, `.clone().detach()`,
`.clone().detach_()`, `torch.detach(x)` and the legacy `x.data` / `x.data.clone()`. Each is found,
rewritten to the same `grad_scale` form as `.detach()`, and the rewrite is executed against the
original. `x.detach_()` alone detaches `x` itself: not a marker. `x.data` is a stop-gradient only
where `x` is a tensor: the fix is safe only where that is proven.
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
    "data": ("x.data", "y.data"),
    "data_clone": ("x.data.clone()", "y.detach()"),
    "data_and_detach": ("x.detach()", "y.data"),
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


# -- the legacy `.data` ------------------------------------------------------------------------------


def test_data_in_the_summed_form():
    src = GF002.replace("z_e.detach().clone()", "z_e.data").replace("z_q.clone().detach()", "z_q.data")
    result = _lint(src, ["GF002"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(11, 47, True)]
    fixed = result.fixed.decode()
    assert "    loss_term = F.mse_loss(z_q, grad_scale(z_e, BETA))\n" in fixed and ".data" not in fixed
    _safe_fix_is_exact(src, ["GF002"])


DATA_UNPROVEN = {
    # an nn.Module's forward may take any object
    "module": ("crit = torch.nn.MSELoss()\n", "crit(x.data, y)", "crit(x, y.data)"),
    # a helper of the file: `p` could be anything with a `data` attribute
    "helper": ("def dist(p, q):\n    return ((p - q) ** 2).mean()\n", "dist(x.data, y)", "dist(x, y.data)"),
    # a part of a larger argument: `x * 2` takes any object with `__mul__`
    "expression": ("", "F.mse_loss(x.data * 2, y)", "F.mse_loss(x * 2, y.data)"),
    # a method on a receiver
    "receiver": ("", "(x.data - y).pow(2).mean()", "(x - y.data).pow(2).mean()"),
    # a class of the file may pass for a tensor in torch's functions
    "torch_function": (
        "class Wrap:\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return func(*args, **(kwargs or {}))\n",
        "F.mse_loss(x.data, y)",
        "F.mse_loss(x, y.data)",
    ),
}


@pytest.mark.parametrize("case", sorted(DATA_UNPROVEN))
def test_data_on_an_operand_not_proven_a_tensor_is_unsafe(case):
    extra, first, second = DATA_UNPROVEN[case]
    src = GF001.replace("\n\ndef step():", "\n" + extra + "\n\ndef step():").replace(
        "F.mse_loss({X}, y)", first
    ).replace("-F.mse_loss(x, {Y})", "-" + second)
    result = _lint(src, ["GF001"])
    assert [f.fixable for f in result.findings] == [False], [f.message for f in result.findings]
    assert "the gradient only on a tensor, which gradfix cannot prove" in result.findings[0].message, result.findings[0].message
    if case != "torch_function":
        # Here the operands are tensors: the unsafe fix is exact, executed.
        from tests.test_field_cases import _unsafe_fix_is_exact

        _unsafe_fix_is_exact(src, ["GF001"])


def test_data_of_an_object_that_is_no_tensor_is_not_a_stop_gradient():
    """Why the proof is needed: an object whose `data` is a tensor with gradient (a PackedSequence
    keeps its values in `.data`). The original sends gradient through `box.data` in both passes;
    the rewrite would scale it: the fix is unsafe, and executing it shows the difference."""
    src = """\
import torch
from torch.nn.utils.rnn import pack_sequence

w = torch.randn(3, requires_grad=True)
v = torch.randn(3, requires_grad=True)


def dist(p, q):
    p = p.data if hasattr(p, "batch_sizes") else p
    return ((p - q) ** 2).sum()


def step():
    box = pack_sequence([w * 2])
    l1 = dist(box.data, v)
    l1.backward(retain_graph=True)
    l2 = -0.5 * dist(box, v.detach())
    l2.backward()
"""
    result = _lint(src, ["GF001"], unsafe=True)
    (finding,) = result.findings
    assert not finding.fixable and "`box.data` stops the gradient only on a tensor" in finding.message
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(src, result.fixed.decode(), filename="train.py", device="cpu", repeat=0)
    assert report.error is None and [r.key for r in report.rows if not r.ok]  # the gradients differ


@pytest.mark.parametrize(
    "first",
    [
        "F.mse_loss(torch.utils.data, y)",  # a module
        "F.mse_loss(x.data(), y)",  # a method named `data`
        "F.mse_loss(x.data.abs(), y)",  # something taken from what `.data` gives
    ],
)
def test_other_uses_of_data_are_not_stop_gradients(first):
    src = GF001.replace("F.mse_loss({X}, y)", first).format(Y="y.detach()")
    assert _lint(src, ["GF001"]).findings == []


GF004 = '''\
import torch
import torch.nn.functional as F

p0 = torch.randn(6, 5, requires_grad=True)
s0 = torch.randn(6, 5, requires_grad=True)
target = torch.randn(6, 5)


def step():
    prior, series = p0.tanh(), s0.sigmoid()
    rec = F.mse_loss(series + prior, target)
    loss1 = rec - 3.0 * F.mse_loss(prior.data, series)
    loss2 = rec + 3.0 * F.mse_loss(prior, series.data)
    (loss1 + loss2).backward()
'''


def test_data_in_two_losses_of_one_backward():
    result = _lint(GF004, ["GF004"])
    assert [(f.line, f.fixable) for f in result.findings] == [(13, True)], [f.message for f in result.findings]
    assert ".data" not in result.fixed.decode()
    _safe_fix_is_exact(GF004, ["GF004"])
