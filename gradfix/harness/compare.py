"""Collect the observable state of an executed snippet and compare two states.

The state is a flat, ordered ``dict`` from a readable path to a value:

* ``"x"`` -> a CPU copy of tensor ``x``; ``"x.grad"`` -> a CPU copy of its
  ``.grad``, or ``None`` when a leaf that requires grad has none (None and a
  tensor of zeros are different results);
* ``"trainer.net.0.weight"`` / ``"trainer.net.0.weight.grad"`` for the
  parameters of an ``nn.Module`` reached through ``trainer.net``, and
  ``"...running_mean"`` for its buffers;
* ``"history[3]"``, ``"log['loss'][0]"`` -> Python numbers (int, float, bool).

A key ending in ``.grad`` holds a gradient; every other key holds a value.

Tolerances follow the dtype a value was *computed* in, which is not always
the dtype it is stored in: under ``torch.autocast`` with a 16-bit dtype,
float32 tensors are the results of bfloat16/float16 arithmetic, and the
rewrite (one evaluation where there were two, a gradient scaled after the
op instead of before) rounds differently at that precision. So when the
original snippet's source enters autocast (:func:`autocast_dtype`), float32
(and complex64) tensors and Python floats are compared with the wider of
their own tolerance and the compute dtype's; float64 (which autocast leaves
alone) and integers are not affected.
"""

from __future__ import annotations

import ast
import inspect
import math
import types
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch

__all__ = ["Row", "autocast_dtype", "collect_state", "compare_states", "compare_tensors", "tolerance"]

# How deep to follow containers and objects' attributes from a global name.
MAX_DEPTH = 8

# Names the harness itself puts into the namespace.
_SKIP_NAMES = frozenset({"DEVICE"})

_GRAD_SUFFIX = ".grad"


# ---------------------------------------------------------------- collection


def _cpu_copy(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    # A copy in every case: the snippet may keep mutating its tensors.
    return t.to("cpu", copy=True)


def _skip(obj: Any) -> bool:
    return (
        isinstance(obj, (types.ModuleType, type))
        or inspect.isroutine(obj)
        or isinstance(obj, (torch.optim.Optimizer, torch.Generator, torch.device, torch.dtype))
        or isinstance(obj, (str, bytes, type(None)))
    )


def collect_state(namespace: Dict[str, Any], ids: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    """Flatten everything comparable reachable from ``namespace`` (see module doc).

    ``ids``, when given, receives ``id()`` of the tensor behind each value key
    (to match keys with the parameters an optimizer stepped).
    """
    state: Dict[str, Any] = {}
    seen: set = set()

    def add_tensor(path: str, t: torch.Tensor, *, with_grad: bool) -> None:
        state[path] = _cpu_copy(t)
        if ids is not None:
            ids[path] = id(t)
        if with_grad:
            g = t.grad
            state[path + _GRAD_SUFFIX] = None if g is None else _cpu_copy(g)

    def walk(path: str, obj: Any, depth: int) -> None:
        if isinstance(obj, torch.Tensor):
            # Tensors are recorded under every path that reaches them, so a
            # name the rewrite adds earlier cannot hide an original one.
            add_tensor(path, obj, with_grad=(obj.is_leaf and obj.requires_grad) or obj.retains_grad)
            return
        if isinstance(obj, (bool, int, float)):
            state[path] = obj
            return
        if _skip(obj) or depth > MAX_DEPTH:
            return
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, torch.nn.Module):
            for name, p in obj.named_parameters():
                add_tensor(f"{path}.{name}", p, with_grad=p.requires_grad)
            for name, b in obj.named_buffers():
                if b is not None:
                    add_tensor(f"{path}.{name}", b, with_grad=False)
            return
        if isinstance(obj, (list, tuple)):
            for i, item in enumerate(obj):
                walk(f"{path}[{i}]", item, depth + 1)
            return
        if isinstance(obj, dict):
            for key, item in obj.items():
                walk(f"{path}[{key!r}]", item, depth + 1)
            return
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            for name, item in list(attrs.items()):
                if isinstance(name, str) and not _is_dunder(name):
                    walk(f"{path}.{name}", item, depth + 1)

    for name, obj in list(namespace.items()):
        # `__name__`, and what torch.compile puts into the globals of the code it compiles
        # (`__builtins_dict___0`, `__compiled_fn_1`, `__resume_at_...`): not the snippet's state.
        if name.startswith("__") or name in _SKIP_NAMES:
            continue
        walk(name, obj, 0)
    return state


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


# ---------------------------------------------------------------- comparison


@dataclass
class Row:
    """One compared entry: ``path`` (without ``.grad``), ``what`` ("value" or
    "grad"), the largest absolute and relative error (None where not
    applicable), whether it is within tolerance, and a note on failures."""

    path: str
    what: str
    max_abs: Optional[float]
    max_rel: Optional[float]
    ok: bool
    note: str = ""
    kind: str = "tensor"  # "tensor" or "number": what the original held
    # True for a parameter value outside tolerance that optimizer steps
    # explain (gradfix.harness.steps): ``ok`` is then True and ``note`` says why.
    explained: bool = False

    @property
    def key(self) -> str:
        return self.path + (_GRAD_SUFFIX if self.what == "grad" else "")


_TOLERANCES = {
    torch.float64: (1e-10, 1e-12),
    torch.complex128: (1e-10, 1e-12),
    torch.float32: (1e-5, 1e-6),
    torch.complex64: (1e-5, 1e-6),
    torch.float16: (2e-2, 1e-3),
    torch.bfloat16: (2e-2, 1e-3),
}


def tolerance(dtype: torch.dtype) -> Tuple[float, float]:
    """``(rtol, atol)`` for ``dtype``; ``(0, 0)`` (exact) for integers and bool."""
    if dtype in _TOLERANCES:
        return _TOLERANCES[dtype]
    if dtype.is_floating_point:  # float8 and other narrow formats
        return _TOLERANCES[torch.float16]
    return (0.0, 0.0)


# Storage dtypes that autocast computes in a narrower dtype.
_AUTOCAST_LOWERED = (torch.float32, torch.complex64)


def effective_tolerance(dtype: torch.dtype, compute_dtype: Optional[torch.dtype] = None) -> Tuple[float, float]:
    """``tolerance(dtype)``, widened to the compute dtype's for float32/complex64 under autocast."""
    rtol, atol = tolerance(dtype)
    if compute_dtype is not None and dtype in _AUTOCAST_LOWERED:
        c_rtol, c_atol = tolerance(compute_dtype)
        rtol, atol = max(rtol, c_rtol), max(atol, c_atol)
    return rtol, atol


# -- autocast in the snippet's source

_LOW = {"bfloat16": torch.bfloat16, "float16": torch.float16, "half": torch.float16}
_FULL = {"float32", "float", "float64", "double"}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _autocast_call_dtype(call: ast.Call) -> Optional[torch.dtype]:
    """The compute dtype one autocast call asks for; None when it lowers nothing."""
    parts = _dotted(call.func).split(".")
    # torch.cuda.amp.autocast(enabled, dtype, cache_enabled) / torch.cpu.amp.autocast(...);
    # otherwise torch.autocast / torch.amp.autocast(device_type, dtype, enabled, cache_enabled).
    legacy = parts[-3:-1] in (["cuda", "amp"], ["cpu", "amp"])
    keywords = {k.arg: k.value for k in call.keywords if k.arg}

    def argument(name: str, position: int) -> Optional[ast.AST]:
        if name in keywords:
            return keywords[name]
        return call.args[position] if len(call.args) > position else None

    enabled = argument("enabled", 0 if legacy else 2)
    if isinstance(enabled, ast.Constant) and enabled.value is False:
        return None
    dtype = argument("dtype", 1)
    if dtype is None:
        device: Optional[str] = parts[-3] if legacy else None
        target = None if legacy else argument("device_type", 0)
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            device = target.value.split(":")[0]
        # autocast's defaults: bfloat16 on CPU, float16 on CUDA (unknown devices: as narrow).
        return torch.bfloat16 if device == "cpu" else torch.float16
    last = _dotted(dtype).split(".")[-1] if isinstance(dtype, (ast.Attribute, ast.Name)) else ""
    if last in _FULL:
        return None
    # bfloat16/float16, or an expression gradfix cannot read: as narrow as autocast goes.
    return _LOW.get(last, torch.bfloat16)


def autocast_dtype(source: str) -> Optional[Tuple[torch.dtype, int, str]]:
    """``(compute dtype, line, call text)`` of the narrowest autocast the source enters, or None.

    Any call whose callee is named ``autocast`` (``torch.autocast``,
    ``torch.amp.autocast``, ``torch.cuda.amp.autocast``, ``torch.cpu.amp.autocast``,
    an imported ``autocast``) counts, unless it passes ``enabled=False`` or a
    float32/float64 dtype literally. A dtype given as an expression counts as
    16-bit. Code that never runs still counts: the tolerance can only widen to
    the 16-bit one, never further.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: Optional[Tuple[torch.dtype, int, str]] = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _dotted(node.func).split(".")[-1] != "autocast":
            continue
        dtype = _autocast_call_dtype(node)
        if dtype is None:
            continue
        text = ast.get_source_segment(source, node) or _dotted(node.func) + "(...)"
        candidate = (dtype, node.lineno, " ".join(text.split()))
        if found is None or (tolerance(dtype) > tolerance(found[0])) or (
            tolerance(dtype) == tolerance(found[0]) and node.lineno < found[1]
        ):
            found = candidate
    return found


def _split_key(key: str) -> Tuple[str, str]:
    if key.endswith(_GRAD_SUFFIX):
        return key[: -len(_GRAD_SUFFIX)], "grad"
    return key, "value"


def compare_tensors(
    a: torch.Tensor, b: torch.Tensor, compute_dtype: Optional[torch.dtype] = None
) -> Tuple[Optional[float], Optional[float], bool, str]:
    """``(max_abs, max_rel, ok, note)`` of ``b`` against ``a`` (see :func:`compare_states`)."""
    return _compare_tensors(a, b, compute_dtype)


def _compare_tensors(
    a: torch.Tensor, b: torch.Tensor, compute_dtype: Optional[torch.dtype] = None
) -> Tuple[Optional[float], Optional[float], bool, str]:
    if a.shape != b.shape:
        return None, None, False, f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.dtype != b.dtype:
        return None, None, False, f"dtype {a.dtype} vs {b.dtype}"
    if a.numel() == 0:
        return 0.0, 0.0, True, ""
    rtol, atol = effective_tolerance(a.dtype, compute_dtype)
    if a.dtype == torch.bool or not (a.is_floating_point() or a.is_complex()):
        diff = (a.to(torch.float64) - b.to(torch.float64)).abs()
        max_abs = float(diff.max())
        ref = torch.maximum(a.to(torch.float64).abs(), b.to(torch.float64).abs())
        max_rel = float(torch.where(ref > 0, diff / ref, torch.zeros_like(diff)).max())
        ok = torch.equal(a, b)
        return max_abs, max_rel, ok, "" if ok else "values differ (exact comparison)"
    wide = torch.complex128 if a.is_complex() else torch.float64
    x, y = a.to(wide), b.to(wide)
    nan_x, nan_y = torch.isnan(x), torch.isnan(y)
    if not torch.equal(nan_x, nan_y):
        n = int((nan_x != nan_y).sum())
        return math.nan, math.nan, False, f"NaN positions differ at {n} element(s)"
    # Equal infinities and NaN pairs count as zero error.
    same = (x == y) | nan_x
    diff = torch.where(same, torch.zeros((), dtype=torch.float64), (x - y).abs())
    ref = torch.maximum(x.abs(), y.abs())
    # Relative to the tensor's largest finite magnitude, not element by
    # element: summation-order noise on an element near zero is not a 100%
    # error of the gradient. An infinity against anything else stays infinite.
    finite = ref[torch.isfinite(ref)]
    scale = float(finite.max()) if finite.numel() else 0.0
    if scale > 0:
        rel = torch.where(torch.isinf(diff), diff, diff / scale)
    else:  # all zeros (or infinities) on both sides: any difference is infinitely relative
        rel = torch.where(diff > 0, torch.full_like(diff, math.inf), torch.zeros_like(diff))
    rel = torch.where(same, torch.zeros((), dtype=torch.float64), rel)
    max_abs, max_rel = float(diff.max()), float(rel.max())
    ok = bool(torch.allclose(y, x, rtol=rtol, atol=atol, equal_nan=True))
    note = "" if ok else f"outside tolerance (rtol {rtol:g}, atol {atol:g})"
    return max_abs, max_rel, ok, note


def _compare_numbers(
    a: Any, b: Any, compute_dtype: Optional[torch.dtype] = None
) -> Tuple[Optional[float], Optional[float], bool, str]:
    if isinstance(a, float) or isinstance(b, float):
        rtol, atol = effective_tolerance(torch.float32, compute_dtype)
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            ok = math.isnan(fa) and math.isnan(fb)
            return (0.0, 0.0, True, "") if ok else (math.nan, math.nan, False, "NaN in one only")
        if fa == fb:  # covers equal infinities
            return 0.0, 0.0, True, ""
        diff = abs(fa - fb)
        ref = max(abs(fa), abs(fb))
        ok = diff <= atol + rtol * abs(fa)
        return diff, diff / ref, ok, "" if ok else f"outside tolerance (rtol {rtol:g}, atol {atol:g})"
    ok = a == b and isinstance(a, bool) == isinstance(b, bool)
    diff = float(abs(int(a) - int(b)))
    ref = float(max(abs(int(a)), abs(int(b))))
    return diff, (diff / ref if ref else 0.0), ok, "" if ok else f"{a!r} vs {b!r}"


def _describe(v: Any) -> str:
    if v is None:
        return "None"
    if isinstance(v, torch.Tensor):
        return "a tensor"
    return type(v).__name__


def compare_states(
    orig: Dict[str, Any], new: Dict[str, Any], *, compute_dtype: Optional[torch.dtype] = None
) -> List[Row]:
    """Compare ``new`` against ``orig``, one :class:`Row` per key of ``orig``.

    Keys only ``new`` has (names the rewrite introduced) are ignored.
    ``compute_dtype``: the dtype autocast computes in (see the module doc), or None.
    """
    rows: List[Row] = []
    for key, a in orig.items():
        path, what = _split_key(key)
        kind = "tensor" if (a is None or isinstance(a, torch.Tensor)) else "number"
        if key not in new:
            rows.append(Row(path, what, None, None, False, "missing in the rewritten state", kind))
            continue
        b = new[key]
        if a is None and b is None:
            rows.append(Row(path, what, 0.0, 0.0, True, "None in both", kind))
        elif a is None or b is None:
            rows.append(Row(path, what, None, None, False,
                            f"{_describe(a)} in original, {_describe(b)} in rewritten", kind))
        elif isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            rows.append(Row(path, what, *_compare_tensors(a, b, compute_dtype), kind))
        elif not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
            rows.append(Row(path, what, *_compare_numbers(a, b, compute_dtype), kind))
        else:
            rows.append(Row(path, what, None, None, False,
                            f"{_describe(a)} in original, {_describe(b)} in rewritten", kind))
    return rows
