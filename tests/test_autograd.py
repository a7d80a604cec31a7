"""Tests for gradfix.autograd.grad_scale, the runtime op rewritten code imports.

Expected gradients are computed independently of the op, from the two-pass
detach form it replaces (DESIGN §1): ``a*f(x.detach(), y)`` and
``b*f(x, y.detach())`` backpropagated separately.
"""

from __future__ import annotations

import math
import re

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gradfix.autograd import grad_scale  # noqa: E402

SPECIAL = [math.inf, -math.inf, math.nan, -0.0, 0.0, 1.5, -2.25, 1e-45, 3.0e38]


def mse(a, b):
    return ((a - b) ** 2).mean()


def two_pass_grads(f, x, y, a=1.0, b=-1.0):
    """Gradients of x and y from the original two-pass form (fresh leaves)."""
    x0 = x.detach().clone().requires_grad_()
    y0 = y.detach().clone().requires_grad_()
    (a * f(x0.detach(), y0)).backward()
    (b * f(x0, y0.detach())).backward()
    return x0.grad, y0.grad


def bits(t):
    """The raw bit pattern, so NaN payloads and -0.0 compare exactly."""
    int_type = {8: torch.int64, 4: torch.int32, 2: torch.int16}[t.element_size()]
    return t.view(int_type)


def assert_value_exact(out, x):
    assert out.shape == x.shape and out.dtype == x.dtype and out.device == x.device
    finite = ~torch.isnan(x)
    assert torch.equal(out[finite], x[finite])
    assert torch.equal(torch.isnan(out), torch.isnan(x))
    assert torch.equal(torch.signbit(out), torch.signbit(x))
    assert torch.equal(bits(out), bits(x))


# ------------------------------------------------------------------ forward


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_forward_is_value_exact_for_special_values(dtype):
    x = torch.tensor(SPECIAL, dtype=dtype, requires_grad=True)
    out = grad_scale(x, -1.0)
    assert_value_exact(out, x)
    # -0.0 stays negative zero (x * 1 style tricks would keep it, x + 0 would not).
    assert torch.signbit(out[3]) and out[3] == 0
    assert torch.isinf(out[0]) and out[0] > 0


def test_forward_is_value_exact_without_grad():
    x = torch.tensor(SPECIAL)
    assert_value_exact(grad_scale(x, 3.0), x)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=16))
def test_forward_bitwise_identity_property(values):
    x = torch.tensor(values, dtype=torch.float32, requires_grad=True)
    out = grad_scale(x, -0.5)
    assert torch.equal(bits(out), bits(x))


def test_forward_keeps_shape_and_noncontiguous_layout():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True).t()
    out = grad_scale(x, 2.0)
    assert out.shape == (4, 3) and out.stride() == x.stride()
    assert torch.equal(out, x)


# ------------------------------------------------------------------ backward


def test_gradient_matches_two_pass_on_leaf():
    torch.manual_seed(0)
    x = torch.randn(5, 3, requires_grad=True)
    y = torch.randn(5, 3, requires_grad=True)
    mse(grad_scale(x, -1.0), y).backward()
    gx, gy = two_pass_grads(mse, x, y)
    torch.testing.assert_close(x.grad, gx)
    torch.testing.assert_close(y.grad, gy)


def test_general_coefficients_match_two_pass():
    torch.manual_seed(1)
    x = torch.randn(7, dtype=torch.float64, requires_grad=True)
    y = torch.randn(7, dtype=torch.float64, requires_grad=True)
    a, b = 0.3, -2.5
    mse(grad_scale(x, b), grad_scale(y, a)).backward()
    gx, gy = two_pass_grads(mse, x, y, a=a, b=b)
    torch.testing.assert_close(x.grad, gx, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(y.grad, gy, rtol=1e-12, atol=1e-14)


def test_gradient_on_non_leaf_flows_upstream():
    torch.manual_seed(2)
    net = torch.nn.Linear(4, 4)
    z = torch.randn(6, 4)
    y = torch.randn(6, 4, requires_grad=True)

    x = net(z)  # non-leaf
    mse(grad_scale(x, -1.0), y).backward()
    got = [p.grad.clone() for p in net.parameters()]

    net.zero_grad(set_to_none=True)
    x = net(z)
    mse(x.detach(), y.detach().clone().requires_grad_()).backward()
    (-mse(x, y.detach())).backward()
    for g, p in zip(got, net.parameters()):
        torch.testing.assert_close(g, p.grad)


def test_double_precision_seed_is_bitwise_equal():
    # Coefficients of ±1 and branches meeting only at leaves: DESIGN §1 says
    # the gradients are bitwise equal.
    torch.manual_seed(3)
    x = torch.randn(64, dtype=torch.float64, requires_grad=True)
    y = torch.randn(64, dtype=torch.float64, requires_grad=True)
    mse(grad_scale(x, -1.0), y).backward()
    gx, gy = two_pass_grads(mse, x, y)
    assert x.grad.dtype == torch.float64
    assert torch.equal(x.grad, gx) and torch.equal(y.grad, gy)


def test_half_precision_gradient_keeps_dtype():
    x = torch.randn(8, dtype=torch.float16, requires_grad=True)
    (grad_scale(x, -1.0) * 2).sum().backward()
    assert x.grad.dtype == torch.float16
    assert torch.equal(x.grad, torch.full_like(x, -2.0))


def test_only_the_wrapped_use_is_scaled():
    # The textbook hook would flip the gradient of the second use too.
    torch.manual_seed(4)
    x = torch.randn(5, requires_grad=True)
    y = torch.randn(5)
    loss = mse(grad_scale(x, -1.0), y) + (x**3).sum()
    loss.backward()
    x0 = x.detach().clone().requires_grad_()
    (-mse(x0, y)).backward()
    (x0**3).sum().backward()
    torch.testing.assert_close(x.grad, x0.grad)
    assert not x._backward_hooks  # no hook was registered on x


def test_later_backward_on_x_is_unaffected():
    x = torch.randn(4, requires_grad=True)
    grad_scale(x, -1.0).sum().backward()
    assert torch.equal(x.grad, -torch.ones(4))
    x.grad = None
    x.sum().backward()  # a separate, unwrapped use
    assert torch.equal(x.grad, torch.ones(4))


def test_x_not_requiring_grad():
    x = torch.randn(5)
    y = torch.randn(5, requires_grad=True)
    out = grad_scale(x, -1.0)
    assert torch.equal(out, x) and not out.requires_grad
    mse(out, y).backward()
    _, gy = two_pass_grads(mse, x, y, a=1.0, b=0.0)
    torch.testing.assert_close(y.grad, gy)


def test_under_no_grad():
    x = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        out = grad_scale(x, -1.0)
    assert out.grad_fn is None and torch.equal(out, x)


@pytest.mark.parametrize("zero", [0.0, 0, torch.tensor(0.0)], ids=["float", "int", "tensor"])
def test_zero_scale_gives_zeros_not_none(zero):
    x = torch.randn(4, requires_grad=True)
    (grad_scale(x, zero) * 3).sum().backward()
    assert x.grad is not None
    assert torch.equal(x.grad, torch.zeros(4))


def test_tensor_scale_is_a_value_read_at_forward_time():
    s = torch.tensor(2.0, requires_grad=True)
    x = torch.randn(3, requires_grad=True)
    out = grad_scale(x, s)
    with torch.no_grad():
        s.fill_(5.0)  # changing it later does not change this use
    out.sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0))
    assert s.grad is None


def test_one_element_tensor_scale_and_float64_scale_on_float32():
    x = torch.randn(3, requires_grad=True)
    grad_scale(x, torch.tensor([-3.0], dtype=torch.float64)).sum().backward()
    assert x.grad.dtype == torch.float32
    assert torch.equal(x.grad, torch.full((3,), -3.0))


def test_bad_scale_is_rejected():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="one-element tensor"):
        grad_scale(x, torch.ones(3))
    with pytest.raises(TypeError, match="number or a one-element tensor"):
        grad_scale(x, "-1")


@pytest.mark.parametrize("value", [3, 2.5, None, "text", True, (1, 2)])
def test_non_tensor_passthrough(value):
    assert grad_scale(value, -1.0) is value


def test_parameter_is_wrapped():
    p = torch.nn.Parameter(torch.randn(3))
    (grad_scale(p, -2.0) * p.detach()).sum().backward()
    assert torch.equal(p.grad, -2.0 * p.detach())


# ------------------------------------------------------------- in-place use


def test_inplace_after_clone_is_fine():
    torch.manual_seed(5)
    x = torch.randn(4, requires_grad=True)
    y = torch.randn(4)
    h = grad_scale(x, -1.0)
    h = h.clone()
    h.mul_(2)
    (h * y).sum().backward()
    assert torch.equal(x.grad, -2.0 * y)


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non-leaf"])
def test_inplace_on_output_raises_instead_of_wrong_gradients(leaf):
    # torch forbids in-place on a view made inside a custom Function, because
    # view+inplace autograd would bypass our backward.  A clear error is what
    # we want; the rewrite must clone first if f mutates its input.
    w = torch.randn(4, requires_grad=True)
    x = w if leaf else w * 1.0
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        grad_scale(x, -1.0).add_(1)


def test_inplace_on_output_without_grad_aliases_like_detach():
    x = torch.zeros(3)
    grad_scale(x, -1.0).add_(1)
    assert torch.equal(x, torch.ones(3))  # same as x.detach().add_(1)


# ---------------------------------------------------------------- torch.func


def test_torch_func_grad():
    torch.manual_seed(6)
    x = torch.randn(5, dtype=torch.float64)
    y = torch.randn(5, dtype=torch.float64)
    gx, gy = torch.func.grad(lambda x, y: mse(grad_scale(x, -1.0), y), argnums=(0, 1))(x, y)
    ex, ey = two_pass_grads(mse, x, y)
    torch.testing.assert_close(gx, ex)
    torch.testing.assert_close(gy, ey)


def test_torch_func_grad_with_tensor_scale():
    x = torch.randn(5, dtype=torch.float64)
    s = torch.tensor(0.5, dtype=torch.float64)
    g = torch.func.grad(lambda x: (grad_scale(x, s) ** 2).sum())(x)
    torch.testing.assert_close(g, 0.5 * 2 * x)


def test_torch_func_vmap_forward_and_per_sample_grad():
    torch.manual_seed(7)
    x = torch.randn(3, 4)
    y = torch.randn(3, 4)
    out = torch.func.vmap(lambda v: grad_scale(v, -1.0))(x)
    assert torch.equal(out, x)
    per_sample = torch.func.vmap(torch.func.grad(lambda a, b: mse(grad_scale(a, -1.0), b)))(x, y)
    expected = torch.stack([two_pass_grads(mse, x[i], y[i])[0] for i in range(3)])
    torch.testing.assert_close(per_sample, expected)


# ------------------------------------------------------------- torch.compile


# The default inductor backend compiles C++ on CPU; it works here (gcc is
# present) but takes ~15 s cold (a few seconds with its on-disk cache warm),
# so it is kept to this one test.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_compile(backend):
    torch._dynamo.reset()
    torch.manual_seed(8)
    x = torch.randn(6, requires_grad=True)
    y = torch.randn(6, requires_grad=True)

    @torch.compile(backend=backend, fullgraph=True)
    def merged(x, y):
        return mse(grad_scale(x, -1.0), y)

    merged(x, y).backward()
    gx, gy = two_pass_grads(mse, x, y)
    torch.testing.assert_close(x.grad, gx)
    torch.testing.assert_close(y.grad, gy)


def test_torch_compile_preserves_special_values():
    torch._dynamo.reset()
    x = torch.tensor(SPECIAL, requires_grad=True)
    out = torch.compile(lambda t: grad_scale(t, -1.0), backend="aot_eager", fullgraph=True)(x)
    assert_value_exact(out, x)


# ----------------------------------------------------------------------- CUDA


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda():
    torch.manual_seed(9)
    x = torch.tensor(SPECIAL, device="cuda", requires_grad=True)
    assert_value_exact(grad_scale(x, -1.0), x)
    x = torch.randn(32, 16, device="cuda", requires_grad=True)
    y = torch.randn(32, 16, device="cuda", requires_grad=True)
    mse(grad_scale(x, -1.0), y).backward()
    gx, gy = two_pass_grads(mse, x, y)
    assert x.grad.device.type == "cuda"
    torch.testing.assert_close(x.grad, gx)
    torch.testing.assert_close(y.grad, gy)
    # a CPU 0-d scale on CUDA gradients
    x.grad = None
    grad_scale(x, torch.tensor(-2.0)).sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, -2.0))


# ------------------------------------------------------- the two forms of the op
#
# grad_scale uses an old-style Function in eager mode (cheaper per call: no
# inspect.signature in Function.apply) and the setup_context Function under
# torch.func and torch.compile (benchmarks/op_candidates.py).  Both forms must
# have every property above.

from gradfix.autograd import _GradScale  # noqa: E402

FORMS = {
    "setup_context": _GradScale.apply,
    "eager": _GradScale._GradScaleEager.apply,
}


@pytest.mark.parametrize("form", list(FORMS))
def test_both_forms_value_exact_and_scaled(form):
    apply = FORMS[form]
    x = torch.tensor(SPECIAL, requires_grad=True)
    out = apply(x, -1.0)
    assert_value_exact(out, x)
    torch.manual_seed(10)
    a = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    mse(apply(a, -2.5), apply(b, 0.3)).backward()
    ga, gb = two_pass_grads(mse, a, b, a=0.3, b=-2.5)
    torch.testing.assert_close(a.grad, ga, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(b.grad, gb, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("form", list(FORMS))
def test_both_forms_zero_and_tensor_scale(form):
    apply = FORMS[form]
    x = torch.randn(4, requires_grad=True)
    (apply(x, 0.0) * 3).sum().backward()
    assert torch.equal(x.grad, torch.zeros(4))
    x.grad = None
    apply(x, torch.tensor(-3.0, dtype=torch.float64)).sum().backward()
    assert x.grad.dtype == torch.float32 and torch.equal(x.grad, torch.full((4,), -3.0))


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non-leaf"])
def test_both_forms_refuse_inplace_on_output(form, leaf):
    w = torch.randn(4, requires_grad=True)
    x = w if leaf else w * 1.0
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        FORMS[form](x, -1.0).add_(1)


@pytest.mark.parametrize("form", list(FORMS))
def test_both_forms_pass_through_without_grad(form):
    x = torch.randn(3)
    out = FORMS[form](x, -1.0)
    assert torch.equal(out, x) and not out.requires_grad and out.grad_fn is None


def test_eager_mode_uses_the_cheap_form():
    x = torch.randn(3, requires_grad=True)
    assert type(grad_scale(x, -1.0).grad_fn).__name__ == "_GradScaleEagerBackward"


def test_torch_func_uses_the_setup_context_form():
    seen = []

    def f(x):
        out = grad_scale(x, -1.0)
        seen.append(torch._C._are_functorch_transforms_active())
        return out.sum()

    assert torch.equal(torch.func.grad(f)(torch.ones(3)), -torch.ones(3))
    assert seen == [True]  # and the eager form would have raised here


def test_falls_back_to_setup_context_form_without_a_predicate(monkeypatch):
    # An older torch without torch.compiler.is_compiling (< 2.3).  (The other
    # predicate cannot be removed here: Function.apply itself calls it.)
    monkeypatch.delattr(torch.compiler, "is_compiling")
    x = torch.randn(3, requires_grad=True)
    out = grad_scale(x, -2.0)
    assert type(out.grad_fn).__name__ == "_GradScaleBackward"
    out.sum().backward()
    assert torch.equal(x.grad, torch.full((3,), -2.0))


INLINE_SEED = b'''import torch
import torch.nn.functional as F

x = torch.randn(5, 3, requires_grad=True)
y = torch.randn(5, 3, requires_grad=True)
l1 = F.mse_loss(x.detach(), y)
l1.backward(retain_graph=True)
l2 = -1 * F.mse_loss(x, y.detach())
l2.backward()
'''


def test_inline_copy_of_the_op_has_both_forms(tmp_path):
    # grad-scale-import = "inline" copies _GradScale and grad_scale into the
    # user's file; the eager form is nested in _GradScale so it comes along.
    import sys
    import types

    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    res = lint_bytes(INLINE_SEED, "seed.py", LintOptions(("GF001",), fix=True, grad_scale_import="inline"))
    assert res.fixed is not None and b"# gradfix: inline grad_scale" in res.fixed
    assert not re.search(rb"^(from|import) gradfix", res.fixed, re.MULTILINE)
    module = types.ModuleType("_gradfix_inline_test")
    sys.modules[module.__name__] = module  # torch.compile looks functions' modules up
    try:
        torch.manual_seed(11)
        exec(compile(res.fixed, str(tmp_path / "seed.py"), "exec"), module.__dict__)
        ns = module.__dict__
        gx, gy = two_pass_grads(mse, ns["x"], ns["y"])
        torch.testing.assert_close(ns["x"].grad, gx)
        torch.testing.assert_close(ns["y"].grad, gy)
        gs = ns["grad_scale"]
        t = torch.randn(3, requires_grad=True)
        assert type(gs(t, -1.0).grad_fn).__name__ == "_GradScaleEagerBackward"
        assert torch.equal(torch.func.grad(lambda v: gs(v, -1.0).sum())(torch.ones(3)), -torch.ones(3))
        torch._dynamo.reset()
        out = torch.compile(lambda v: gs(v, -1.0).sum(), backend="aot_eager", fullgraph=True)(t)
        out.backward()
        assert torch.equal(t.grad, -torch.ones(3))
    finally:
        sys.modules.pop(module.__name__, None)


def test_containers_are_scaled_element_by_element_and_other_objects_refused():
    """Rewritten code may wrap an argument that is a tuple of trainable weights:
    passing it through unscaled would silently change their gradients."""
    import collections

    w1 = torch.randn(3, requires_grad=True)
    w2 = torch.randn(3, requires_grad=True)
    out = grad_scale((w1, [w2]), 0.0)
    assert isinstance(out, tuple) and isinstance(out[1], list)
    (out[0].sum() + out[1][0].sum()).backward()
    assert torch.equal(w1.grad, torch.zeros(3)) and torch.equal(w2.grad, torch.zeros(3))

    pair = collections.namedtuple("pair", "a b")
    a = torch.ones(2, requires_grad=True)
    scaled = grad_scale(pair(a, 3), -2.0)
    assert type(scaled).__name__ == "pair" and scaled.b == 3
    scaled.a.sum().backward()
    assert torch.equal(a.grad, torch.full((2,), -2.0))

    d = torch.ones(2, requires_grad=True)
    grad_scale({"k": d}, 0.5)["k"].sum().backward()
    assert torch.equal(d.grad, torch.full((2,), 0.5))

    assert grad_scale([1, "x", None, torch.float32], 2.0) == [1, "x", None, torch.float32]
    with pytest.raises(TypeError, match="inside a Linear"):
        grad_scale(torch.nn.Linear(2, 2), 0.0)


def test_a_numpy_scalar_scale_is_a_number():
    """Stop 35: GF002 takes a loss weight bound outside the file (`self.beta`) for a number; numpy's
    `float32` is one, read as a float. An array of several elements is not."""
    np = pytest.importorskip("numpy")
    x = torch.randn(3, requires_grad=True)
    grad_scale(x, np.float32(-0.25)).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), -0.25))
    with pytest.raises(TypeError, match="got ndarray"):
        grad_scale(x, np.ones(3))
