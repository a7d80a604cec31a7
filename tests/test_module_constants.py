"""Module-level constant tensors (issue 12): a callee reading `W1 = torch.randn(...) / 32` is pure.

A tensor bound once at module level by a torch factory without `requires_grad`,
and only read in ways that leave it untrainable and unchanged, is a constant
(`gradfix.analysis.constants`): the fix is safe, and executed it is exact. Every
way the file could make it trainable or change it keeps the fix unsafe, and
where that way makes it trainable, the unsafe rewrite is shown to change a
gradient (its two gradients cancel to 0 in the original).
"""

from __future__ import annotations

import pytest

from tests.test_soundness_autograd import _has_safe_fix, _rewrite_differs, _unsafe_naming

TEMPLATE = '''\
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
W1 = {W1}
{BEFORE}

def f(p, q):
    return {BODY}


def step():
    x, y = a * 2, b * 3
    l1 = f(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -f(x, y.detach())
    l2.backward()
{AFTER}'''


def _src(w1="torch.randn(3, 3) / 32", body="F.mse_loss(p @ W1, q)", before="", after=""):
    return TEMPLATE.format(W1=w1, BODY=body, BEFORE=before, AFTER=after)


SAFE = {
    "factory_scaled": {},
    "zeros_plus_eye": {"w1": "torch.zeros(3, 3) + torch.eye(3)"},
    "cast_and_move": {"w1": "torch.randn(3, 3).float().to('cpu')"},
    "requires_grad_false": {"w1": "torch.randn(3, 3, requires_grad=False)"},
    "chained_constant": {"w1": "W0 * 2"},
    "transposed_view": {"body": "F.mse_loss(p @ W1.t(), q)"},
    "indexed_row": {"body": "F.mse_loss(p * W1[0], q)"},
    "torch_matmul": {"body": "F.mse_loss(torch.matmul(p, W1), q)"},
    "shape_read_elsewhere": {"after": "\n\nprint(W1.shape, W1.sum().item())\n"},
}


def _safe_src(case):
    src = _src(**SAFE[case])
    if case == "chained_constant":
        src = src.replace("W1 = W0 * 2", "W0 = torch.randn(3, 3)\nW1 = W0 * 2")
    return src


@pytest.mark.parametrize("case", sorted(SAFE))
def test_constant_tensor_read_by_callee_is_safe_and_exact(case):
    _has_safe_fix(_safe_src(case), ["GF001"])


# (source change, whether the file makes W1 trainable: then the unsafe rewrite changes W1's gradient)
UNSAFE = {
    "requires_grad_true": ({"w1": "torch.randn(3, 3, requires_grad=True)"}, True),
    "requires_grad_method": ({"before": "W1.requires_grad_()\n"}, True),
    "requires_grad_attribute": ({"before": "W1.requires_grad = True\n"}, True),
    "requires_grad_in_function": ({"after": "\n\ndef train():\n    W1.requires_grad_(True)\n"}, False),
    "as_tensor_of_trainable": ({"w1": "torch.as_tensor(a[:3, :3])"}, True),
    "inplace_update": ({"after": "\n\ndef bump(v):\n    W1.add_(v)\n"}, False),
    "inplace_through_view": ({"after": "\n\ndef bump(v):\n    W1.t().mul_(v)\n"}, False),
    "subscript_store": ({"after": "\n\ndef bump(v):\n    W1[0] = v\n"}, False),
    "aliased": ({"before": "V = W1\n"}, False),
    "passed_on": ({"before": "params = [W1]\n"}, False),
    "returned": ({"after": "\n\ndef weights():\n    return W1\n"}, False),
    "global_rebinding": ({"after": "\n\ndef reset():\n    global W1\n    W1 = a\n"}, False),
    "parameter_of_it": ({"before": "P = torch.nn.Parameter(W1)\n"}, False),
    "out_keyword": ({"after": "\n\ndef bump(v):\n    torch.add(v, 1, out=W1)\n"}, False),
    "string_reads": ({"before": "globals()['W1'].requires_grad_()\n"}, True),
    "numpy_alias": ({"after": "\n\ndef bump():\n    W1.numpy()[0, 0] = 1.0\n"}, False),
    "kwargs_factory": ({"w1": "torch.randn(3, 3, **OPTS)"}, False),
}


def _unsafe_src(case):
    spec, _ = UNSAFE[case]
    src = _src(**spec)
    if case == "kwargs_factory":
        src = src.replace("W1 = torch.randn(3, 3, **OPTS)", "OPTS = {'requires_grad': True}\nW1 = torch.randn(3, 3, **OPTS)")
    return src


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_possibly_trainable_global_keeps_fix_unsafe(case):
    _unsafe_naming(_unsafe_src(case), ["GF001"], "W1")


@pytest.mark.parametrize("case", sorted(c for c, (_, trainable) in UNSAFE.items() if trainable))
def test_trainable_global_unsafe_rewrite_changes_its_gradient(case):
    _rewrite_differs(_unsafe_src(case), ["GF001"])


def test_constant_makes_callee_harmless_between_backward_calls():
    # GF003: `f(...)` between the two backward calls was "may step, zero or read gradients".
    src = _src().replace("    l1 = f(x.detach(), y)\n", "    l1 = f(x, y)\n").replace("-f(x, y.detach())", "f(y, x) * 3")
    from tests.test_soundness_autograd import _lint

    result = _lint(src, ["GF003"])
    assert [(f.code, f.line, f.fixable) for f in result.findings] == [("GF003", 16, True)]
    _has_safe_fix(src, ["GF003"])
