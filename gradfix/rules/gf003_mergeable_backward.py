"""GF003 mergeable-backward: consecutive `backward` calls on a retained graph that one `backward` of the sum replaces.

## What it does
Finds, inside one straight-line block, two or more `backward` calls where
every call but the last keeps the graph (`retain_graph=True`) and nothing
between them steps, zeroes, reads or clips gradients:

    loss_rec.backward(retain_graph=True)
    loss_kl.backward()

The calls may be spelled `loss.backward(...)`, `scaler.scale(loss).backward(...)`,
Lightning's `self.manual_backward(loss, ...)`, `torch.autograd.backward(loss, ...)` or
Accelerate's `accelerator.backward(loss, ...)` (a name bound only to
`accelerate.Accelerator(...)`; that merge is never safe: under DeepSpeed each call also
steps the optimizer);
a loss may be a name, or an item under a literal key of a dict the function
builds itself (`losses["adv"]`). The pre-0.4 `retain_variables=True` is read as
the `retain_graph=True` it meant (alone, with the literal `True`).

## Why it is costly
`retain_graph=True` keeps the whole graph alive so that the next call can walk
the shared part of it again. Gradients are linear in the loss, so one
backward of the sum gives the same gradients with one traversal of the shared
graph, and lets autograd free it as it goes.

## Example and rewrite
    (loss_rec + loss_kl).backward()

With a GradScaler, `scaler.scale(a).backward(retain_graph=True)` and
`scaler.scale(b).backward()` (the same scaler) become
`scaler.scale(a + b).backward()`. The last call's keyword arguments are kept.

## Not reported
When any call passes `gradient=`, `inputs=` or `create_graph=` (docs/design.md §1,
E7: per-call gradients or higher order), a positional argument or `**kwargs`;
when the calls use different scalers or one is scaled and the other not; when
a call does not retain the graph before the last one; when anything between
them steps an optimizer, zeroes, reads or writes `.grad`, clips, modifies a
tensor in place, runs `torch.autograd.grad`, rebinds a loss that is
backpropagated later than before, or can skip the rest (`return`, `break`,
`continue`, `raise`). The pattern of GF001 and GF004 (the same function
twice with complementary `.detach()`, in two losses of the run) is left to
those rules, whose rewrites merge the backward calls too and save more.

## Fix safety
Safe when every loss is a name (its value is computed where it was) and only
calls known to be harmless stand between the backward calls. The sum is
exact by linearity; only floating-point summation order differs. Otherwise
unsafe: a loss written inline is evaluated later than before, an unknown
call between the passes may step, zero or read gradients, and a gradient
hook registered in the file (`register_hook`, `register_full_backward_hook`,
`register_post_accumulate_grad_hook`, `register_multi_grad_hook`, ...) runs
once per backward pass: `h(g1) + h(g2)` becomes `h(g1 + g2)`, equal only for
a linear, stateless hook (`g.clamp(...)` or a hook recording gradients is
not). Hooks registered in another module are not seen. A custom
`torch.autograd.Function` defined in the file runs its `backward` once per
pass in the same way: unless gradfix proves that backward linear in its
gradients and stateless (products by values that do not depend on a
gradient, sums of gradients, views, reductions, masks to zero, None or zeros
returned), the fix is unsafe and names its line; a Function imported from
another module is not seen. When the last call does not retain the graph, a
later `backward()` or `torch.autograd.grad()` in the same function may use a
graph an earlier call kept alive, which the one backward frees: unsafe. A call
passing `retain_variables=True` raises TypeError on every supported torch (0.4
renamed it `retain_graph`), where the merged backward, which writes the last
call's retain as `retain_graph=True`, runs: always unsafe.
"""

from __future__ import annotations

from gradfix import prechecks

CODE = "GF003"
NAME = "mergeable-backward"
SUMMARY = "Consecutive `backward` calls on a retained graph: one `backward` of the sum gives the same gradients"
DEFAULT = True
FIXABLE = "sometimes"
REQUIRED_TOKENS = (b"backward(", prechecks.retain_keyword)
# Where both apply, GF001's and GF004's rewrites (which merge the backward calls too) are the better ones.
SUPERSEDED_BY = ("GF001", "GF004")


def might_match(data: bytes, text: bytes, state: dict) -> bool:
    """A retaining plain backward followed by another plain backward in the same block."""
    return (
        text.count(b"backward") >= 2
        and prechecks.RETAIN_TRUE.search(text) is not None
        and prechecks.backward_retain(text)
        and prechecks.retained_backward_then_backward(data, state)
    )


# The visitor, named here and imported by the registry only for a file that passes the precheck:
# it needs libcst, which a run where no file is parsed never imports.
VISITOR = "gradfix.rules._gf003_mergeable_backward_impl:Visitor"
