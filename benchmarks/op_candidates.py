"""Which gradient-scaling op should rewritten code call?  Cost and exactness of the candidates.

Every candidate is the identity in the forward pass and multiplies the gradient
of this one use of ``x`` by ``scale`` (DESIGN §1).  All share the same argument
handling (non-tensors pass through, a tensor scale is detached and copied), so
only the mechanism differs:

setup_context   custom ``autograd.Function`` with ``setup_context`` (gradfix 0.1.0's op)
old_ctx         custom ``autograd.Function``, old style: ``forward(ctx, x, scale)``
view_hook       ``y = x.view_as(x); y.register_hook(lambda g: g * scale)``, guarded:
                only when ``y`` requires grad, so the hook is on the view (scoped)
base_apply      the setup_context Function entered through ``torch._C._FunctionBase.apply``
                (skips ``Function.apply``'s per-call ``inspect.signature``; public
                ``apply`` under torch.func / torch.compile)
library_op      ``torch.library.custom_op`` with ``register_autograd``; custom ops may
                not return a view of an input, so its forward is a copy
arith           pure torch: ``x.detach() + (s*x - (s*x).detach())`` (no Python backward)
dispatch        old_ctx in eager mode, setup_context when a torch.func transform is active
installed       ``gradfix.autograd.grad_scale`` as it is in this checkout (since this work:
                dispatch, plus setup_context while torch.compile traces, with the eager
                class nested in the setup_context one so the inline copy carries it)
inline          the same, as ``grad-scale-import = "inline"`` copies it into a rewritten file

For each: exactness checks (the properties gradfix's op documents), per-call
overhead (tiny tensor: forward, backward, both; minus the same code without
the op) and end-to-end step time on the tiny-f snippet rewritten to use it.  Prints Markdown tables; ``--json PATH`` writes the figures.

    python benchmarks/op_candidates.py [--device cpu|cuda] [--threads K] [--repeat N]
                                       [--inductor] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import _bench  # noqa: I001  (sets sys.path and the kineto log level before torch loads)
import torch

import gradfix.autograd
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

# ------------------------------------------------------------------ candidates


def _prepare_scale(scale: Any) -> Any:
    if isinstance(scale, torch.Tensor):
        if scale.numel() != 1:
            raise ValueError("scale must be a number or a one-element tensor")
        return scale.detach().reshape(()).clone()
    if not isinstance(scale, (int, float)):
        raise TypeError("scale must be a number or a one-element tensor")
    return scale


def _wrap(core: Callable[[torch.Tensor, Any], torch.Tensor]) -> Callable[[Any, Any], Any]:
    def grad_scale(x: Any, scale: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        return core(x, _prepare_scale(scale))

    return grad_scale


class _SetupContext(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, scale):
        return x.view_as(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, scale = inputs
        if isinstance(scale, torch.Tensor):
            ctx.scale_is_tensor = True
            ctx.save_for_backward(scale)
        else:
            ctx.scale_is_tensor = False
            ctx.scale = scale

    @staticmethod
    def backward(ctx, grad):
        scale = ctx.saved_tensors[0] if ctx.scale_is_tensor else ctx.scale
        return grad * scale, None


class _OldCtx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


def _view_hook(x, scale):
    y = x.view_as(x)
    if y.requires_grad:
        y.register_hook(lambda g: g * scale)
    return y


# _C._FunctionBase.apply bound to _SetupContext: what Function.apply calls after its checks.
_base_apply = super(torch.autograd.function._SingleLevelFunction, _SetupContext).apply  # type: ignore[misc]


def _transforms_active() -> bool:
    return torch._C._are_functorch_transforms_active()


def _base_apply_core(x, scale):
    if _transforms_active() or torch.compiler.is_compiling():
        return _SetupContext.apply(x, scale)
    return _base_apply(x, scale)


@torch.library.custom_op("gradfix_bench::grad_scale_copy", mutates_args=())
def _library_op(x: torch.Tensor, scale: float) -> torch.Tensor:
    return x.clone()  # a custom op's output may not alias its input


@_library_op.register_fake
def _(x, scale):
    return torch.empty_like(x)


def _library_setup(ctx, inputs, output):
    ctx.scale = inputs[1]


def _library_backward(ctx, grad):
    return grad * ctx.scale, None


_library_op.register_autograd(_library_backward, setup_context=_library_setup)


def _library_core(x, scale):
    return _library_op(x, float(scale))


def _arith(x, scale):
    d = x.detach()
    return d + (scale * x - (scale * x).detach())


def _dispatch(x, scale):
    if _transforms_active():
        return _SetupContext.apply(x, scale)
    return _OldCtx.apply(x, scale)


def _inline_op() -> Callable[[Any, Any], Any]:
    """The op as gradfix inlines it (grad-scale-import = "inline"), taken from a rewritten snippet."""
    path = _bench.SNIPPETS / "tiny_prototype.py"
    res = lint_bytes(path.read_bytes(), str(path), LintOptions(("GF001",), fix=True, grad_scale_import="inline"))
    assert res.fixed is not None and b"gradfix: inline grad_scale" in res.fixed
    # A module of its own that stays in sys.modules: torch.compile looks the
    # op's module up by name.
    module = types.ModuleType("_gradfix_bench_inline")
    module.__dict__["__file__"] = str(path)
    sys.modules[module.__name__] = module
    exec(compile(res.fixed.decode("utf-8"), str(path), "exec"), module.__dict__)
    return module.__dict__["grad_scale"]


CANDIDATES: Dict[str, Callable[[Any, Any], Any]] = {
    "setup_context": _wrap(_SetupContext.apply),
    "old_ctx": _wrap(_OldCtx.apply),
    "view_hook": _wrap(_view_hook),
    "base_apply": _wrap(_base_apply_core),
    "library_op": _wrap(_library_core),
    "arith": _wrap(_arith),
    "dispatch": _wrap(_dispatch),
    "installed": gradfix.autograd.grad_scale,
    "inline": _inline_op(),
}

# ------------------------------------------------------------------ exactness

SPECIAL = [math.inf, -math.inf, math.nan, -0.0, 0.0, 1.5, -2.25, 1e-45, 3.0e38]


def _mse(a, b):
    return ((a - b) ** 2).mean()


def _two_pass(f, x, y, a=1.0, b=-1.0):
    x0 = x.detach().clone().requires_grad_()
    y0 = y.detach().clone().requires_grad_()
    (a * f(x0.detach(), y0)).backward()
    (b * f(x0, y0.detach())).backward()
    return x0.grad, y0.grad


def _bits(t):
    return t.view({8: torch.int64, 4: torch.int32, 2: torch.int16}[t.element_size()])


def _close(a, b, tol=1e-6) -> bool:
    return a is not None and b is not None and torch.allclose(a, b, rtol=tol, atol=tol)


class Fail(AssertionError):
    pass


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise Fail(what)


def chk_values(gs, dev):
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        x = torch.tensor(SPECIAL, dtype=dtype, device=dev, requires_grad=True)
        out = gs(x, -1.0)
        _check(out.dtype == x.dtype and out.shape == x.shape, f"dtype/shape changed ({dtype})")
        _check(torch.equal(_bits(out.detach()), _bits(x.detach())), f"bits differ ({dtype}): inf/NaN/-0 not preserved")


def chk_leaf(gs, dev):
    torch.manual_seed(0)
    x = torch.randn(5, 3, device=dev, requires_grad=True)
    y = torch.randn(5, 3, device=dev, requires_grad=True)
    _mse(gs(x, -1.0), y).backward()
    gx, gy = _two_pass(_mse, x, y)
    _check(_close(x.grad, gx) and _close(y.grad, gy), "gradients differ from the two-pass form")


def chk_general(gs, dev):
    torch.manual_seed(1)
    x = torch.randn(7, dtype=torch.float64, device=dev, requires_grad=True)
    y = torch.randn(7, dtype=torch.float64, device=dev, requires_grad=True)
    _mse(gs(x, -2.5), gs(y, 0.3)).backward()
    gx, gy = _two_pass(_mse, x, y, a=0.3, b=-2.5)
    _check(_close(x.grad, gx, 1e-12) and _close(y.grad, gy, 1e-12), "general coefficients differ")


def chk_upstream(gs, dev):
    torch.manual_seed(2)
    net = torch.nn.Linear(4, 4).to(dev)
    z = torch.randn(6, 4, device=dev)
    y = torch.randn(6, 4, device=dev)
    _mse(gs(net(z), -1.0), y).backward()
    got = [p.grad.clone() for p in net.parameters()]
    net.zero_grad(set_to_none=True)
    (-_mse(net(z), y)).backward()
    _check(all(_close(g, p.grad) for g, p in zip(got, net.parameters())), "non-leaf: upstream gradients differ")


def chk_no_grad_input(gs, dev):
    x = torch.randn(5, device=dev)
    y = torch.randn(5, device=dev, requires_grad=True)
    out = gs(x, -1.0)
    _check(torch.equal(out, x) and not out.requires_grad, "value or requires_grad wrong")
    _mse(out, y).backward()
    _check(_close(y.grad, 2 * (y.detach() - x) / 5), "gradient of the other operand differs")


def chk_zero_scale(gs, dev):
    x = torch.randn(4, device=dev, requires_grad=True)
    (gs(x, 0.0) * 3).sum().backward()
    _check(x.grad is not None, "scale 0 left .grad None (the original gives zeros)")
    _check(torch.equal(x.grad, torch.zeros(4, device=dev)), "scale 0 gave non-zero gradient")


def chk_scoped(gs, dev):
    x = torch.randn(5, device=dev, requires_grad=True)
    y = torch.randn(5, device=dev)
    (_mse(gs(x, -1.0), y) + (x**3).sum()).backward()
    x0 = x.detach().clone().requires_grad_()
    (-_mse(x0, y)).backward()
    (x0**3).sum().backward()
    _check(_close(x.grad, x0.grad), "another use of x was scaled too")
    x.grad = None
    x.sum().backward()
    _check(torch.equal(x.grad, torch.ones(5, device=dev)), "a later backward through x was scaled")
    _check(not x._backward_hooks, "a hook was left on x")


def chk_repeat_leaf(gs, dev):
    # Several training steps on the same leaf: nothing may accumulate.
    x = torch.randn(3, device=dev, requires_grad=True)
    for _ in range(3):
        x.grad = None
        gs(x, -2.0).sum().backward()
    _check(torch.equal(x.grad, torch.full((3,), -2.0, device=dev)), "gradient changes across steps")


def chk_tensor_scale(gs, dev):
    s = torch.tensor(2.0, device=dev, requires_grad=True)
    x = torch.randn(3, device=dev, requires_grad=True)
    out = gs(x, s)
    with torch.no_grad():
        s.fill_(5.0)
    out.sum().backward()
    _check(torch.equal(x.grad, torch.full((3,), 2.0, device=dev)), "tensor scale not read at forward time")
    _check(s.grad is None, "gradient leaked into the scale tensor")


def chk_no_grad_mode(gs, dev):
    x = torch.randn(3, device=dev, requires_grad=True)
    with torch.no_grad():
        out = gs(x, -1.0)
    _check(out.grad_fn is None and torch.equal(out, x), "no_grad: graph recorded or value changed")


def _inplace(gs, dev, leaf: bool):
    torch.manual_seed(5)
    w = torch.randn(4, device=dev, requires_grad=True)
    y = torch.randn(4, device=dev)
    x = w if leaf else w * 1.0

    def f(u):  # f mutates its input in place
        u.mul_(2)
        return (u * y).sum()

    try:
        f(gs(x, -1.0)).backward()
    except RuntimeError as e:
        return f"raises ({str(e).split('.')[0][:60]}...)"
    _check(w.grad is not None and _close(w.grad, -2.0 * y), f"SILENTLY WRONG: grad {w.grad.tolist()} vs {(-2 * y).tolist()}")
    return "correct"


def chk_inplace_leaf(gs, dev):
    return _inplace(gs, dev, leaf=True)


def chk_inplace_nonleaf(gs, dev):
    return _inplace(gs, dev, leaf=False)


def chk_func_grad(gs, dev):
    torch.manual_seed(6)
    x = torch.randn(5, dtype=torch.float64, device=dev)
    y = torch.randn(5, dtype=torch.float64, device=dev)
    gx, gy = torch.func.grad(lambda a, b: _mse(gs(a, -1.0), b), argnums=(0, 1))(x, y)
    ex, ey = _two_pass(_mse, x, y)
    _check(_close(gx, ex, 1e-12) and _close(gy, ey, 1e-12), "torch.func.grad differs")
    s = torch.tensor(0.5, dtype=torch.float64, device=dev)
    g = torch.func.grad(lambda a: (gs(a, s) ** 2).sum())(x)
    _check(_close(g, x, 1e-12), "torch.func.grad with a tensor scale differs")


def chk_func_vmap(gs, dev):
    torch.manual_seed(7)
    x = torch.randn(3, 4, device=dev)
    y = torch.randn(3, 4, device=dev)
    _check(torch.equal(torch.func.vmap(lambda v: gs(v, -1.0))(x), x), "vmap forward changed values")
    per = torch.func.vmap(torch.func.grad(lambda a, b: _mse(gs(a, -1.0), b)))(x, y)
    exp = torch.stack([_two_pass(_mse, x[i], y[i])[0] for i in range(3)])
    _check(_close(per, exp), "vmap(grad) differs")


def _compiled(gs, dev, backend):
    torch._dynamo.reset()
    torch.manual_seed(8)
    x = torch.randn(6, device=dev, requires_grad=True)
    y = torch.randn(6, device=dev, requires_grad=True)
    fn = torch.compile(lambda a, b: _mse(gs(a, -1.0), b), backend=backend, fullgraph=True)
    fn(x, y).backward()
    gx, gy = _two_pass(_mse, x, y)
    _check(_close(x.grad, gx) and _close(y.grad, gy), f"torch.compile({backend}) gradients differ")
    torch._dynamo.reset()
    s = torch.tensor(SPECIAL, device=dev, requires_grad=True)
    out = torch.compile(lambda t: gs(t, -1.0), backend=backend, fullgraph=True)(s)
    _check(torch.equal(_bits(out.detach()), _bits(s.detach())), f"torch.compile({backend}) changed values")


def chk_compile_aot_eager(gs, dev):
    _compiled(gs, dev, "aot_eager")


def chk_compile_inductor(gs, dev):
    _compiled(gs, dev, "inductor")


CHECKS: List[Tuple[str, Callable]] = [
    ("values inf/NaN/-0", chk_values),
    ("leaf grads", chk_leaf),
    ("general coefs", chk_general),
    ("non-leaf upstream", chk_upstream),
    ("x without grad", chk_no_grad_input),
    ("scale 0 -> zeros", chk_zero_scale),
    ("scoped to this use", chk_scoped),
    ("repeated steps", chk_repeat_leaf),
    ("tensor scale", chk_tensor_scale),
    ("no_grad mode", chk_no_grad_mode),
    ("in-place in f (leaf)", chk_inplace_leaf),
    ("in-place in f (non-leaf)", chk_inplace_nonleaf),
    ("torch.func.grad", chk_func_grad),
    ("torch.func.vmap(grad)", chk_func_vmap),
    ("compile aot_eager", chk_compile_aot_eager),
]


def run_checks(gs, dev, inductor: bool) -> Dict[str, str]:
    checks = CHECKS + ([("compile inductor", chk_compile_inductor)] if inductor else [])
    out: Dict[str, str] = {}
    for name, fn in checks:
        try:
            note = fn(gs, dev)
            out[name] = "ok" if note in (None, "correct") else f"ok: {note}"
        except Fail as e:
            out[name] = f"FAIL: {e}"
        except Exception as e:  # noqa: BLE001 - an unsupported situation is a result here
            out[name] = f"ERROR: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
    return out


# --------------------------------------------------------------------- timing


def per_call(device: str, rounds: int, n: int) -> Dict[str, Dict[str, float]]:
    """µs per call on a 16-element tensor, each minus the same code without the op.

    fwd: ``gs(x, -1.0)`` (graph recorded); bwd: ``backward()`` of graphs built
    beforehand; fwd+bwd: ``(gs(x, -1.0) * w).sum().backward()`` in one loop,
    the per-use cost (more than the sum of the two: freeing each graph, its
    Python ctx included, falls in neither of the others).  ``(none)`` is the code without the op.  Each round
    times ``n`` calls of every variant, interleaved; the figure is the best
    round (noise on a shared machine only ever adds time), the median round is
    kept too.
    """
    x = torch.randn(16, device=device, requires_grad=True)
    w = torch.randn(16, device=device)

    def fwd(gs):
        def run():
            for _ in range(n):
                gs(x, -1.0)
        return run

    def bwd(gs):
        # Graphs are built outside the timed call, fresh for every round.
        pending: List[List[torch.Tensor]] = []

        def build():
            pending.append([(gs(x, -1.0) * w).sum() for _ in range(n)])

        def run():
            for loss in pending.pop():
                loss.backward()
        return build, run

    def fwd_bwd(gs):
        def run():
            for _ in range(n):
                (gs(x, -1.0) * w).sum().backward()
        return run

    def none(x, scale):
        return x

    names = ["(none)", *CANDIDATES]
    ops = [none, *CANDIDATES.values()]
    result: Dict[str, Dict[str, float]] = {k: {} for k in names}

    def record(label: str, times: List[List[float]]) -> None:
        for k, t in zip(names, times):
            result[k][label] = min(t) * 1e3 / n
            result[k][label + " median"] = _bench.median(t) * 1e3 / n

    record("fwd", _bench.interleaved([fwd(gs) for gs in ops], device, rounds, warmup=1))
    record("fwd+bwd", _bench.interleaved([fwd_bwd(gs) for gs in ops], device, rounds, warmup=1))
    pairs = [bwd(gs) for gs in ops]
    times: List[List[float]] = [[] for _ in ops]
    with _bench.default_device(device):
        for r in range(rounds + 1):
            for i, (build, run) in enumerate(pairs):
                build()
                t = _bench.time_call(run, device)
                if r:  # the first round warms up
                    times[i].append(t)
    record("bwd", times)
    for k in names:
        for label in ("fwd", "bwd", "fwd+bwd"):
            result[k][label + " overhead"] = result[k][label] - result["(none)"][label]
    return result


def _module_for(name: str, gs) -> str:
    modname = f"_gradfix_bench_op_{name}"
    module = types.ModuleType(modname)
    module.grad_scale = gs  # type: ignore[attr-defined]
    sys.modules[modname] = module
    return modname


def end_to_end(device: str, size: str, repeat: int, warmup: int) -> Dict[str, float]:
    """Median step ms of the tiny-f snippet: original, and rewritten with each candidate."""
    path = _bench.SNIPPETS / "tiny_prototype.py"
    original = path.read_text(encoding="utf-8")
    sources = {"original": original}
    for name, gs in CANDIDATES.items():
        res = lint_bytes(path.read_bytes(), str(path), LintOptions(("GF001",), fix=True, grad_scale_import=_module_for(name, gs)))
        assert res.fixed is not None and not res.remaining, "tiny_prototype must get a safe fix"
        sources[name] = res.fixed.decode("utf-8")
    with _bench.size_env(size):
        steps = [_bench.load(src, str(path), device)["step"] for src in sources.values()]
    times = _bench.interleaved(steps, device, repeat, warmup)
    return {name: _bench.median(t) for name, t in zip(sources, times)}


# --------------------------------------------------------------------- output


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=200, help="timed tiny-f steps per variant (median)")
    ap.add_argument("--rounds", type=int, default=15, help="rounds of the per-call loops (median)")
    ap.add_argument("--calls", type=int, default=500, help="calls per per-call round")
    ap.add_argument("--inductor", action="store_true", help="also check torch.compile with inductor (slow)")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    try:
        device = _bench.check_device(args.device)
    except _bench.NoCuda as e:
        print(e)
        return 0
    torch.set_num_threads(args.threads)
    env = _bench.environment(device, torch.get_num_threads())

    # Timing first: the checks compile and trace, which leaves state behind.
    timing = per_call(device, args.rounds, args.calls)
    e2e = {size: end_to_end(device, size, args.repeat, 5) for size in _bench.SIZES}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. the library op's missing batching rule
        checks = {name: run_checks(gs, device, args.inductor) for name, gs in CANDIDATES.items()}

    print(f"grad_scale candidates: {env.device_name}, torch {env.torch}, {env.threads} thread(s), {env.date}\n")
    names = list(CANDIDATES)
    check_names = list(next(iter(checks.values())))

    def cell(text: str) -> str:
        if text.startswith("ok: raises"):
            return "raises"
        return text.split(":")[0]

    print("Exactness: ok; raises (torch refuses, loudly: acceptable); "
          "FAIL (silently wrong or a property missing); ERROR (unsupported there).\n")
    rows = [[c] + [cell(checks[n][c]) for n in names] for c in check_names]
    print(_bench.markdown_table(["check", *names], rows, left=len(names) + 1))
    notes = [(n, c, checks[n][c]) for n in names for c in check_names
             if checks[n][c] != "ok" and not checks[n][c].startswith("ok: raises")]
    if notes:
        print()
        for n, c, text in notes:
            print(f"- {n} / {c}: {text}")

    print(f"\nCost: µs per call on a 16-element tensor, best of {args.rounds} interleaved rounds of "
          f"{args.calls} calls, minus the same code without the op (fwd: the call; bwd: backward() of "
          f"graphs built beforehand; fwd+bwd: both in one loop, the per-use cost); tiny-f step: "
          f"tiny_prototype.py rewritten to use each op, median of {args.repeat} interleaved steps, "
          f"speedup over the original.\n")
    rows = []
    for n in ["(none)", *names]:
        t = timing[n]
        row = [n, f"{t['fwd overhead']:+.1f}", f"{t['bwd overhead']:+.1f}", f"{t['fwd+bwd overhead']:+.1f}"]
        for size in _bench.SIZES:
            key = "original" if n == "(none)" else n
            ms = e2e[size][key]
            row.append(f"{ms * 1e3:.0f} (original)" if n == "(none)" else f"{ms * 1e3:.0f} ({e2e[size]['original'] / ms:.2f}x)")
        rows.append(row)
    print(_bench.markdown_table(
        ["op", "fwd µs", "bwd µs", "fwd+bwd µs", "tiny-f small: step µs (speedup)", "tiny-f large: step µs (speedup)"],
        rows, left=1))
    t0 = timing["(none)"]
    print(f"\nWithout any op: {t0['fwd']:.2f} µs (fwd), {t0['bwd']:.1f} µs (bwd), "
          f"{t0['fwd+bwd']:.1f} µs (fwd+bwd) per call.")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "environment": vars(env), "checks": checks, "per_call_us": timing, "tiny_f_step_ms": e2e,
        }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
