"""Soundness of merged backward passes and of callee purity (issue 11, items 1, 4, 5, 7).

Each case is a minimal reproduction of a safe fix that was wrong: it asserts the
finding is reported with no safe fix and that the reason names the line, and
executes the original against the unsafe rewrite (`gradfix.harness`) to show
the difference is real (different gradients or observable state, or a rewrite
that raises where the original ran). The near misses next to them keep their
safe fix, executed and exact.
"""

from __future__ import annotations

import textwrap

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from tests.test_field_cases import _safe_fix_is_exact

HEAD = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
a = torch.randn(6, 3, requires_grad=True)
b = torch.randn(6, 3, requires_grad=True)

"""


def _src(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def _lint(src: str, codes, unsafe: bool = False):
    result = lint_bytes(src.encode(), "train.py", LintOptions(codes, fix=True, unsafe_fixes=unsafe))
    assert result.error is None
    return result


def _line_of(src: str, needle: str) -> int:
    """The 1-based line of the only line of `src` holding `needle`."""
    lines = [i for i, text in enumerate(src.splitlines(), 1) if needle in text]
    assert len(lines) == 1, (needle, lines)
    return lines[0]


def _unsafe_naming(src: str, codes, *parts: str):
    """Every finding is reported without a safe fix, its reason holding every one of `parts`."""
    result = _lint(src, codes)
    assert result.findings, "expected the pattern to be reported"
    assert result.fixed is None
    for finding in result.findings:
        assert finding.fix is not None and not finding.fix.safe, finding.message
        for part in parts:
            assert part in finding.fix.unsafe_reason, (part, finding.fix.unsafe_reason)
    return result


def _rewrite_differs(src: str, codes, *, raises: str = "") -> None:
    """The unsafe rewrite, executed, gives other values or gradients than the original (or raises)."""
    harness = pytest.importorskip("gradfix.harness")
    fixed = _lint(src, codes, unsafe=True).fixed
    assert fixed is not None
    report = harness.verify_pair(src, fixed.decode(), filename="train.py", device="cpu", repeat=0)
    if raises:
        assert report.error is not None and raises in report.error, report.error
        return
    assert report.error is None, report.error
    assert [r.key for r in report.rows if not r.ok], "expected the rewrite to differ"


def _has_safe_fix(src: str, codes) -> None:
    result = _lint(src, codes)
    assert result.findings and all(f.fixable for f in result.findings), [f.message for f in result.findings]
    _safe_fix_is_exact(src, codes)


# ---------------------------------------------------------------------------
# 1. A custom torch.autograd.Function whose backward is not linear in its
#    gradient, upstream of the losses: two backward passes give
#    clip(g1) + clip(g2), one pass of the merged losses clip(g1 + g2).

FUNCTION_TEMPLATE = '''
class ClipGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        BODY


def step():
    h = ClipGrad.apply(a * 2)
    x, y = h * 3, h + b
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -0.5 * F.mse_loss(x, y.detach())
    l2.backward()
'''

NONLINEAR_BACKWARDS = {
    "clamp": "return grad.clamp(-0.01, 0.01)",
    "sign": "return grad.sign()",
    "normalised": "return grad / (grad.norm() + 1e-8)",
    "torch_clamp": "return torch.clamp(grad, -0.01, 0.01)",
    "branch_on_grad": "if grad.abs().max() > 1.0:\n            return grad * 0.5\n        return grad",
    "offset": "return grad + 0.01",
    "square": "return grad * grad",
    "unknown_call": "return shrink(grad)",
    "stateful": "SEEN.append(1)\n        return grad * len(SEEN)",
    "store_on_ctx": "ctx.last = grad\n        return grad",
    "masked_nonzero": "g = grad.clone()\n        g[g.abs() > 0.01] = 0\n        return g",
    "torch_add_constant": "return torch.add(grad, 0.01)",
    "cast": "return grad.sum(dim=1, keepdim=True, dtype=torch.int64).float().expand_as(grad)",
    "mutates_saved": "(x,) = ctx.saved_tensors\n        x.mul_(0.5)\n        return grad * x",
    "returns_constant": "(x,) = ctx.saved_tensors\n        return x * 0.01",
    "affine_in_branch": "g = grad * 2\n        if ctx.needs_input_grad[0]:\n            g = grad + 1\n        return g",
    "grad_times_grad_method": "return grad.mul(grad)",
}

EXTRA = '''
SEEN = []


def shrink(g):
    return g * 0.5 if g.abs().sum() > 1 else g
'''


def _function_case(body: str) -> str:
    return _src(EXTRA + FUNCTION_TEMPLATE.replace("BODY", body))


@pytest.mark.parametrize("name", list(NONLINEAR_BACKWARDS))
@pytest.mark.parametrize("code", ["GF001", "GF003"])
def test_nonlinear_function_backward_is_unsafe(name, code):
    src = _function_case(NONLINEAR_BACKWARDS[name])
    line = _line_of(src, "def backward(ctx, grad)")
    _unsafe_naming(src, [code], "`ClipGrad.backward`", f"line {line}")


@pytest.mark.parametrize("name", ["clamp", "sign", "normalised", "branch_on_grad", "stateful"])
@pytest.mark.parametrize("code", ["GF001", "GF003"])
def test_nonlinear_function_backward_executed(name, code):
    _rewrite_differs(_function_case(NONLINEAR_BACKWARDS[name]), [code])


LINEAR_BACKWARDS = {
    "identity": "return grad",
    "scaled": "return grad * 0.5",
    "negated": "return -grad",
    "saved_tensor": "(x,) = ctx.saved_tensors if ctx.saved_tensors else (None,)\n        return grad * 2.0",
    "relu_mask": "(x,) = ctx.saved_tensors\n        g = grad.clone()\n        g[x < 0] = 0\n        return g",
    "views": "return grad.reshape(-1).view(grad.shape) * 1.5",
    "conditional_none": "g = None\n        if ctx.needs_input_grad[0]:\n            g = grad / 2\n        return g",
    "inplace_scale": "g = grad.clone()\n        g.mul_(0.5)\n        return g",
    "shape": "n = grad.shape[0]\n        m = grad.size(1)\n        return grad * (1.0 / n) * m",
    "sum_of_grads": "return torch.add(grad, grad * 0.5)",
    "einsum": "return torch.einsum('ij->ij', grad)",
    "where_mask": "(x,) = ctx.saved_tensors\n        return torch.where(x > 0, grad, 0.0)",
    "accumulate": "total = 0\n        for k in range(2):\n            total += grad * 0.5\n        return total",
}


@pytest.mark.parametrize("name", list(LINEAR_BACKWARDS))
@pytest.mark.parametrize("code", ["GF001", "GF003"])
def test_linear_function_backward_keeps_safe_fix(name, code):
    _has_safe_fix(_function_case(LINEAR_BACKWARDS[name]), [code])


GF004_FUNCTION = _src(
    '''
    class ClipGrad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad.clamp(-0.01, 0.01)


    def kl(p, q):
        return torch.sum(p * (torch.log(p) - torch.log(q)), dim=-1).mean()


    def step():
        h = ClipGrad.apply(a * 2)
        series = torch.softmax(h, -1)
        prior = torch.softmax(h * 0.5 + b, -1)
        s_loss = kl(series, prior.detach())
        p_loss = kl(series.detach(), prior)
        s_loss.backward(retain_graph=True)
        p_loss.backward()
    '''
)


def test_gf004_nonlinear_function_backward_is_unsafe():
    line = _line_of(GF004_FUNCTION, "def backward(ctx, grad)")
    _unsafe_naming(GF004_FUNCTION, ["GF004"], "`ClipGrad.backward`", f"line {line}")


def test_gf004_nonlinear_function_backward_executed():
    _rewrite_differs(GF004_FUNCTION, ["GF004"])


def test_inline_grad_scale_is_linear():
    # gradfix's own op, copied into a file by `grad-scale-import = "inline"`, keeps fixes safe.
    import inspect

    import gradfix.autograd as runtime

    op = inspect.getsource(runtime._GradScale)
    src = _src(
        op
        + '''

    def step():
        h = a * 2
        x, y = h * 3, h + b
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -0.5 * F.mse_loss(x, y.detach())
        l2.backward()
    '''.replace("\n    ", "\n")
    )
    assert _lint(src, ["GF001"]).findings[0].fixable


# ---------------------------------------------------------------------------
# 4. GF001 with a later backward through the graph the first call retained:
#    the merged backward frees it, and the later call raises.

LATER_GRAD = _src(
    """
    D = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    probe = []


    def step():
        h = a * 2
        x, y = h * 3, torch.tanh(h + b)
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -0.5 * F.mse_loss(x, y.detach())
        l2.backward()
        (g,) = torch.autograd.grad(y.sum(), b)
        probe.append(g.norm().item())
    """
)


def test_gf001_later_grad_through_retained_graph_is_unsafe():
    line = _line_of(LATER_GRAD, "torch.autograd.grad(y.sum(), b)")
    _unsafe_naming(LATER_GRAD, ["GF001"], f"line {line}", "retain_graph=True")


def test_gf001_later_grad_through_retained_graph_executed():
    _rewrite_differs(LATER_GRAD, ["GF001"], raises="RuntimeError")


def test_gf001_later_backward_after_retaining_merge_is_safe():
    # The second call retains the graph too: the merged call keeps it alive.
    src = LATER_GRAD.replace("l2.backward()", "l2.backward(retain_graph=True)")
    _has_safe_fix(src, ["GF001"])


# ---------------------------------------------------------------------------
# 5. An augmented assignment on a local alias of a parameter inside a helper:
#    the rewrite passes a view (grad_scale) and the in-place update raises.

ALIAS_HELPERS = {
    "plain_alias": "d = u\n    d -= v\n    return d.pow(2).mean()",
    "view_alias": "d = u.view(-1)\n    d -= v.view(-1)\n    return d.pow(2).mean()",
    "detach_alias": "d = u.detach() if False else u\n    d *= 2\n    return (d - v).pow(2).mean()",
    "loop_alias": "for d in (u,):\n        d -= v\n    return u.pow(2).mean()",
    "tuple_alias": "d, e = u, v\n    d -= e\n    return d.pow(2).mean()",
}


def _helper_case(body: str) -> str:
    return _src(
        f"""
def dist(u, v):
    {body}


def step():
    h = a * 2
    x, y = h * 3, h + b
    l1 = dist(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -0.5 * dist(x, y.detach())
    l2.backward()
"""
    )


@pytest.mark.parametrize("name", list(ALIAS_HELPERS))
def test_inplace_on_alias_of_parameter_is_unsafe(name):
    src = _helper_case(ALIAS_HELPERS[name])
    line = _line_of(src, "d -= ") if "d -= " in src else _line_of(src, "d *= ")
    _unsafe_naming(src, ["GF001"], "`dist`", f"line {line}")


def test_inplace_on_walrus_alias_is_unsafe():
    # (Already unknown: a name bound by `:=` is not a local the checker follows.)
    _unsafe_naming(_helper_case("s = (d := u).sum()\n    d -= v\n    return d.pow(2).mean() + 0 * s"), ["GF001"], "`dist`")


@pytest.mark.parametrize("name", ["plain_alias", "view_alias"])
def test_inplace_on_alias_of_parameter_executed(name):
    _rewrite_differs(_helper_case(ALIAS_HELPERS[name]), ["GF001"], raises="RuntimeError")


FRESH_HELPERS = {
    "difference": "d = u - v\n    d *= 2\n    return d.pow(2).mean()",
    "accumulator": "total = 0.0\n    for i in range(2):\n        total += (u - v).pow(2).mean()\n    return total",
    "clone": "d = u.clone()\n    d -= v\n    return d.pow(2).mean()",
    "list": "terms = []\n    terms += [(u - v).pow(2).mean()]\n    return terms[0]",
}


@pytest.mark.parametrize("name", list(FRESH_HELPERS))
def test_inplace_on_fresh_local_keeps_safe_fix(name):
    _has_safe_fix(_helper_case(FRESH_HELPERS[name]), ["GF001"])


# ---------------------------------------------------------------------------
# 7. Forward hooks on a module-form callee (or a loss module) run once after the
#    rewrite instead of twice: gradients exact, observable state not.

HOOK_REGISTRATIONS = {
    "forward_hook": "D.register_forward_hook(log)",
    "forward_pre_hook": "D.register_forward_pre_hook(lambda m, args: calls.append(1))",
    "global_forward_hook": "nn.modules.module.register_module_forward_hook(log)",
    "global_forward_pre_hook": "torch.nn.modules.module.register_module_forward_pre_hook(lambda m, args: calls.append(1))",
    "other_module": "E.register_forward_hook(log)",
}


def _hook_case(registration: str, callee: str = "D") -> str:
    return _src(
        f"""
D = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
E = nn.Linear(2, 2)
crit = nn.MSELoss()
calls = []


def log(module, args, output):
    calls.append(1)


{registration}


def step():
    x, y = a * 2, b * 3
    l1 = {callee}(torch.cat([x.detach(), y], 1)).mean()
    l1.backward(retain_graph=True)
    l2 = -{callee}(torch.cat([x, y.detach()], 1)).mean()
    l2.backward()
"""
    )


@pytest.mark.parametrize("name", list(HOOK_REGISTRATIONS))
def test_forward_hook_on_module_callee_is_unsafe(name):
    src = _hook_case(HOOK_REGISTRATIONS[name])
    line = _line_of(src, HOOK_REGISTRATIONS[name])
    _unsafe_naming(src, ["GF001"], "forward hook", f"line {line}")


@pytest.mark.parametrize("name", ["forward_hook", "global_forward_pre_hook"])
def test_forward_hook_on_module_callee_executed(name):
    _rewrite_differs(_hook_case(HOOK_REGISTRATIONS[name]), ["GF001"])


LOSS_HOOK = _src(
    """
crit = nn.MSELoss()
calls = []
crit.register_forward_hook(lambda m, args, out: calls.append(out.item()))


def step():
    x, y = a * 2, b * 3
    l1 = crit(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -0.5 * crit(x, y.detach())
    l2.backward()
"""
)


def test_forward_hook_on_loss_module_is_unsafe():
    line = _line_of(LOSS_HOOK, "register_forward_hook")
    _unsafe_naming(LOSS_HOOK, ["GF001"], "forward hook", f"line {line}")


def test_forward_hook_on_loss_module_executed():
    _rewrite_differs(LOSS_HOOK, ["GF001"])


def test_module_callee_without_forward_hook_keeps_safe_fix():
    _has_safe_fix(_hook_case("E.register_buffer('k', torch.zeros(1))"), ["GF001"])


# A backward bound by an assignment (in the class body or from outside) is not followed.
_BOUND_STEP = '''

def _bw(ctx, g):
    return g.clamp(-0.01, 0.01)


def step():
    h = ClipGrad.apply(a * 2)
    x, y = h * 3, h + b
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -0.5 * F.mse_loss(x, y.detach())
    l2.backward()
'''

BOUND_BACKWARDS = {
    "class_body": '''
class ClipGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    backward = staticmethod(lambda ctx, g: _bw(ctx, g))
''',
    "patched": '''
class ClipGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g


ClipGrad.backward = staticmethod(lambda ctx, g: _bw(ctx, g))
''',
    "setattr": '''
class ClipGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g


setattr(ClipGrad, "backward", staticmethod(lambda ctx, g: _bw(ctx, g)))
''',
}


@pytest.mark.parametrize("name", list(BOUND_BACKWARDS))
def test_backward_bound_by_assignment_is_unsafe(name):
    src = _src(BOUND_BACKWARDS[name] + _BOUND_STEP)
    needle = {"class_body": "backward = staticmethod", "patched": "ClipGrad.backward = ", "setattr": "setattr(ClipGrad"}[name]
    _unsafe_naming(src, ["GF003"], f"line {_line_of(src, needle)}")


@pytest.mark.parametrize("name", ["class_body", "patched"])
def test_backward_bound_by_assignment_executed(name):
    _rewrite_differs(_src(BOUND_BACKWARDS[name] + _BOUND_STEP), ["GF003"])


def test_amp_custom_bwd_linear_backward_keeps_safe_fix():
    src = _src(
        '''
class Scale(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx, x):
        return x * 2

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        return g * 2
'''
        + _BOUND_STEP.replace("ClipGrad", "Scale")
    )
    _has_safe_fix(src, ["GF003"])
