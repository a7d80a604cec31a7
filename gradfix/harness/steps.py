"""Optimizer steps seen while a snippet runs, and what they explain.

An optimizer step can turn a gradient difference far inside the tolerance
into a parameter difference far outside it. Adam normalises each element of
the gradient by its own running magnitude: where the true gradient is exactly
zero, the original may hold 1e-12 (two passes' contributions that cancel up
to rounding) and the rewrite exactly 0, and one step moves the first by about
``lr`` and the second not at all. Comparing post-step parameter values alone
then reports a mismatch that is not one.

So every ``optimizer.step()`` of the compared run is recorded (global step
pre/post hooks of ``torch.optim``): for each parameter of the step, its value
before, its ``.grad`` at that moment, and its value after. A parameter
value that differs between original and rewrite is *explained* (reported as
OK, with a note) only when all of this holds:

1. both sides made the same sequence of step calls (same optimizer classes,
   same number of parameters each, in the same order), none of them with a
   closure (an optimizer that recomputes gradients inside ``step``, such as
   LBFGS, is judged on its post-step values only);
2. at every step call, every parameter of the step (not only this one: an
   update may depend on other parameters' gradients) had a gradient on both
   sides that agreed within the comparison's tolerance, or none on either
   side (torch's optimizers skip it then);
3. every parameter's value before its first step agreed within tolerance,
   and on each side nothing but the optimizer changed it afterwards (its value
   before each later step is bit for bit its value after the previous one);
4. the compared value is bit for bit that parameter's value after its last
   step, on each side.

Then the rewrite's gradients agreed with the original's wherever they were
used, and the values differ only by what the optimizer made of differences
within tolerance. A real gradient difference still fails condition 2 and
stays a mismatch, even when ``zero_grad()`` after the step leaves no
gradient to compare at the end. Values computed from the stepped parameters
afterwards (a loss evaluated after ``step()``, an EMA copy of the weights)
are not explained and are compared as they are.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch

__all__ = ["ParamStep", "StepCall", "StepRecorder", "explain_amplified"]

# (max_abs, max_rel, ok, note), as gradfix.harness.compare._compare_tensors returns.
TensorComparison = Callable[[torch.Tensor, torch.Tensor], Tuple[Optional[float], Optional[float], bool, str]]


def _copy(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    return t.to("cpu", copy=True)


@dataclass
class ParamStep:
    before: torch.Tensor
    grad: Optional[torch.Tensor]
    after: Optional[torch.Tensor] = None  # None when the step raised


@dataclass
class StepCall:
    optimizer: str
    closure: bool
    params: List[torch.Tensor] = field(default_factory=list)  # live references: identities stay unique
    entries: List[ParamStep] = field(default_factory=list)


class StepRecorder:
    """Records every optimizer step taken inside :meth:`recording`."""

    def __init__(self) -> None:
        self.calls: List[StepCall] = []
        self._open: Dict[int, List[StepCall]] = {}

    @contextlib.contextmanager
    def recording(self) -> Iterator["StepRecorder"]:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        pre = register_optimizer_step_pre_hook(self._pre)
        post = register_optimizer_step_post_hook(self._post)
        try:
            yield self
        finally:
            pre.remove()
            post.remove()

    def _pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        # torch passes the bound call's arguments: (optimizer, closure?) and keywords.
        closure = (len(args) > 1 and args[1] is not None) or kwargs.get("closure") is not None
        call = StepCall(type(optimizer).__name__, closure)
        for group in optimizer.param_groups:
            for p in group["params"]:
                call.params.append(p)
                call.entries.append(ParamStep(_copy(p), None if p.grad is None else _copy(p.grad)))
        self.calls.append(call)
        self._open.setdefault(id(optimizer), []).append(call)

    def _post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        stack = self._open.get(id(optimizer))
        if not stack:
            return
        call = stack.pop()
        for p, entry in zip(call.params, call.entries):
            entry.after = _copy(p)

    def positions(self) -> Dict[int, List[Tuple[int, int]]]:
        """id(parameter) -> [(call index, slot)] of every step that updated it."""
        out: Dict[int, List[Tuple[int, int]]] = {}
        for c, call in enumerate(self.calls):
            for s, p in enumerate(call.params):
                out.setdefault(id(p), []).append((c, s))
        return out


def _bitwise_same(a: Optional[torch.Tensor], b: Optional[torch.Tensor]) -> bool:
    if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        nan_a, nan_b = torch.isnan(a), torch.isnan(b)
        if not torch.equal(nan_a, nan_b):
            return False
        return bool(torch.equal(torch.where(nan_a, torch.zeros_like(a), a), torch.where(nan_b, torch.zeros_like(b), b)))
    return bool(torch.equal(a, b))


def steps_agree(orig: StepRecorder, new: StepRecorder, compare: TensorComparison) -> Tuple[bool, str, float]:
    """Conditions 1-3 of the module doc: (holds, why not, largest step-time gradient difference)."""
    if not orig.calls:
        return False, "no optimizer step", 0.0
    if len(orig.calls) != len(new.calls):
        return False, f"{len(orig.calls)} optimizer steps in the original, {len(new.calls)} in the rewrite", 0.0
    worst = 0.0
    for k, (a, b) in enumerate(zip(orig.calls, new.calls), 1):
        if a.optimizer != b.optimizer or len(a.entries) != len(b.entries):
            return False, f"optimizer step {k} differs between the two", 0.0
        if a.closure or b.closure:
            return False, f"optimizer step {k} takes a closure (gradients computed inside step)", 0.0
        for ea, eb in zip(a.entries, b.entries):
            if ea.after is None or eb.after is None:
                return False, f"optimizer step {k} did not finish", 0.0
            if ea.grad is None and eb.grad is None:
                continue  # skipped by the optimizer on both sides (no closure recomputes it)
            if ea.grad is None or eb.grad is None:
                return False, f"a parameter of optimizer step {k} has a gradient on one side only", 0.0
            max_abs, _, ok, _ = compare(ea.grad, eb.grad)
            if not ok:
                return False, f"gradients at optimizer step {k} differ (max abs {max_abs:.1e})", 0.0
            if max_abs is not None:
                worst = max(worst, max_abs)
    # Values before each parameter's first step agree; afterwards only the optimizer changes them.
    for side in (orig, new):
        last: Dict[int, ParamStep] = {}
        for call in side.calls:
            for p, entry in zip(call.params, call.entries):
                previous = last.get(id(p))
                if previous is not None and not _bitwise_same(previous.after, entry.before):
                    return False, "a parameter changed between optimizer steps", 0.0
                last[id(p)] = entry
    first_seen = set()
    for a, b in zip(orig.calls, new.calls):
        for p, ea, eb in zip(a.params, a.entries, b.entries):
            if id(p) in first_seen:
                continue
            first_seen.add(id(p))
            if not compare(ea.before, eb.before)[2]:
                return False, "parameter values differ before the first optimizer step", 0.0
    return True, "", worst


def explain_amplified(
    rows: List[Any],
    orig: StepRecorder,
    new: StepRecorder,
    orig_ids: Dict[str, int],
    new_ids: Dict[str, int],
    orig_state: Dict[str, Any],
    new_state: Dict[str, Any],
    compare: TensorComparison,
) -> int:
    """Mark the value rows that optimizer steps explain (see the module doc) as OK with a note; return how many."""
    candidates = [r for r in rows if not r.ok and r.what == "value" and r.kind == "tensor"]
    if not candidates:
        return 0
    holds, _, worst = steps_agree(orig, new, compare)
    if not holds:
        return 0
    orig_pos, new_pos = orig.positions(), new.positions()
    explained = 0
    for row in candidates:
        key = row.key
        if key not in orig_ids or key not in new_ids:
            continue
        where = orig_pos.get(orig_ids[key])
        if not where or new_pos.get(new_ids[key]) != where:
            continue
        c, s = where[-1]
        if not (
            _bitwise_same(orig_state.get(key), orig.calls[c].entries[s].after)
            and _bitwise_same(new_state.get(key), new.calls[c].entries[s].after)
        ):
            continue
        names = sorted({orig.calls[i].optimizer for i, _ in where})
        steps = len(where)
        row.ok = True
        row.explained = True
        row.note = (
            f"differs after {steps} optimizer step{'s' if steps != 1 else ''} ({', '.join(names)}) whose gradients "
            f"agree within tolerance (max abs {worst:.1e}): the step amplifies gradient rounding"
        )
        explained += 1
    return explained
