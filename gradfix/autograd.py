"""``grad_scale``: the runtime op that gradfix-rewritten code imports.

``grad_scale(x, scale)`` is the identity in the forward pass and multiplies
the gradient flowing back through *this one use* of ``x`` by ``scale``.  It
lets a rewrite merge ``a*f(x.detach(), y)`` and ``b*f(x, y.detach())`` into
one pass, ``f(grad_scale(x, b), grad_scale(y, a))`` (docs/design.md §1, §2).

Why not a hook: ``x.register_hook(lambda g: -g)`` changes the gradient of
*every* use of ``x`` (another loss term, a later backward, ``y`` computed
from ``x``), accumulates on leaves across iterations and raises when ``x``
does not require grad.  This op is a node in the graph between ``x`` and the
one expression it wraps, so nothing else is touched.  It is a custom
``torch.autograd.Function`` whose forward is ``x.view_as(x)``: value-exact
(inf, NaN and -0.0 pass through untouched, same dtype, device and shape, no
copy), unlike arithmetic tricks such as ``x.detach() + c*(x - x.detach())``
that turn inf into NaN.  It works on leaves and non-leaves, under
``torch.compile`` and under ``torch.func`` (``grad``, ``vmap``).

Two forms of the same Function, chosen per call (benchmarks/op_candidates.py
has the numbers): in eager mode an old-style ``forward(ctx, ...)`` Function
(~8 µs a call on CPU), because ``Function.apply`` runs ``inspect.signature``
on every call of a ``setup_context`` Function (~37 µs); when a ``torch.func``
transform is active or ``torch.compile`` is tracing, the ``setup_context``
form, which those transforms require.  Both have the same forward and backward.  A view plus a tensor hook
would cost the same as the eager form but is silently wrong when ``f``
modifies its input in place, so it is not used.

Behaviour worth knowing:

* ``x`` that is not a tensor (a number, None, a string) is returned
  unchanged, because the static rewriter cannot always know an argument's
  type.  A tensor that does not require grad comes back as a view of itself.
* ``scale`` is a Python number or a one-element tensor; it is read as a
  value when the forward runs (no gradient flows to it).  ``scale == 0``
  gives ``x`` a gradient of zeros, not None, as the original two-pass code
  would.
* The result is a view of ``x``.  Modifying it in place while autograd
  records raises torch's own ``RuntimeError`` ("Output 0 of _GradScaleEager
  is a view and is being modified inplace ... cloning the output"), instead of
  silently computing wrong gradients; ``grad_scale(x, s).clone()`` first if
  ``f`` mutates its input.  Without autograd recording, it aliases ``x``
  exactly as ``x.detach()`` would.

This module imports only torch, so projects can vendor it as is.
"""

from __future__ import annotations

from typing import Any, Union

import torch

__all__ = ["grad_scale", "scaled_params_call"]

Scale = Union[float, int, bool, torch.Tensor]


class _GradScale(torch.autograd.Function):
    # Forward and backward are plain torch ops, so torch.func can derive the
    # batching rule itself.
    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, scale: Scale) -> torch.Tensor:
        # A view, not a copy: value-exact and free, yet a new autograd node
        # whose backward is ours. Other layouts (sparse, sparse CSR, mkldnn)
        # implement no `view_as`: a copy there (a sparse adjacency matrix
        # passed to both evaluations is wrapped like any other argument).
        # (Written out in both forwards: the inline copy of the op carries
        # only these classes and `grad_scale`.)
        return x.view_as(x) if x.layout == torch.strided else x.clone()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
        _, scale = inputs
        if isinstance(scale, torch.Tensor):
            # torch.func transforms need saved tensors to go through
            # save_for_backward.
            ctx.scale_is_tensor = True
            ctx.save_for_backward(scale)
        else:
            ctx.scale_is_tensor = False
            ctx.scale = scale

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        scale = ctx.saved_tensors[0] if ctx.scale_is_tensor else ctx.scale
        # `grad * 0` is a tensor of zeros, so a zero scale still gives x a
        # gradient (None would differ from the original's zeros).
        return grad * scale, None

    class _GradScaleEager(torch.autograd.Function):
        """The same op in the old style, for eager mode: no per-call signature binding.

        Nested in the setup_context class so that the inline copy of the op
        (gradfix's ``grad-scale-import = "inline"``) carries it along.
        torch.func transforms reject this form and torch.compile does not
        trace a nested class: ``grad_scale`` does not use it there.
        """

        @staticmethod
        def forward(ctx: Any, x: torch.Tensor, scale: Scale) -> torch.Tensor:
            ctx.scale = scale
            return x.view_as(x) if x.layout == torch.strided else x.clone()

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> tuple:
            return grad * ctx.scale, None


def grad_scale(x: Any, scale: Scale) -> Any:
    """Return ``x`` unchanged in value; scale the gradient of this use by ``scale``.

    Rewritten code may wrap an argument whose type the static tool cannot
    know: plain values (numbers, strings, None) are returned as they are;
    lists, tuples and dicts are rebuilt with every tensor inside scaled; any
    other object is refused with a TypeError, because tensors it holds (a
    module's parameters) would silently keep an unscaled gradient.
    """
    if not isinstance(x, torch.Tensor):
        if x is None or isinstance(x, (bool, int, float, complex, str, bytes, torch.dtype, torch.device)):
            return x
        if isinstance(x, (list, tuple)):
            items = [grad_scale(item, scale) for item in x]
            if all(new is old for new, old in zip(items, x)):
                return x  # nothing to scale inside: the very same object
            return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
        if isinstance(x, dict):
            scaled = {key: grad_scale(value, scale) for key, value in x.items()}
            if all(scaled[key] is value for key, value in x.items()):
                return x
            return type(x)(scaled.items())
        raise TypeError(
            f"grad_scale: cannot scale the gradients of tensors inside a {type(x).__name__}; "
            f"pass the tensors themselves"
        )
    if isinstance(scale, torch.Tensor):
        if scale.numel() != 1:
            raise ValueError(
                f"grad_scale: scale must be a number or a one-element tensor, "
                f"got a tensor of shape {tuple(scale.shape)}"
            )
        # Used as a value: no gradient to it, and a copy so that a later
        # in-place change of the caller's tensor cannot alter (or, through
        # the version counter, break) the backward.
        scale = scale.detach().reshape(()).clone()
    elif not isinstance(scale, (int, float)):
        # Another real number (numpy's `float32(0.25)` read from a configuration: a rewritten loss
        # weight may be one) is read as a float; a string or an array of several elements is not one.
        value = None
        if getattr(type(scale), "__float__", None) is not None and not isinstance(scale, (str, bytes, complex)):
            try:
                value = float(scale)
            except (TypeError, ValueError):
                value = None
        if value is None:
            raise TypeError(
                f"grad_scale: scale must be a number or a one-element tensor, "
                f"got {type(scale).__name__}"
            )
        scale = value
    # torch.func transforms need the setup_context form, and torch.compile
    # traces it (not the nested class); in plain eager mode the old-style form
    # gives the same result without Function.apply's per-call
    # inspect.signature.  The transform predicate is the one Function.apply
    # itself consults; where a torch lacks either predicate, the
    # setup_context form is used, which is always correct.
    compiling = getattr(torch.compiler, "is_compiling", None)
    transforms_active = getattr(torch._C, "_are_functorch_transforms_active", None)
    if compiling is None or transforms_active is None or compiling() or transforms_active():
        return _GradScale.apply(x, scale)
    return _GradScale._GradScaleEager.apply(x, scale)


def scaled_params_call(module: Any, scale: Scale, *args: Any, **kwargs: Any) -> Any:
    """Call ``module(*args, **kwargs)`` with its parameters' gradients scaled by ``scale``.

    The module form of a merge (docs/design.md §2): where the original evaluated a
    module twice, its parameters received ``(a+b)·∂f/∂θ``; one call through
    this function gives them the same. ``scale == 0`` (they cancel, as in
    ``f(x.detach(), y) - f(x, y.detach())``) runs the module on detached
    parameters — no weight-gradient work at all — and gives each trainable
    parameter whose ``.grad`` is None a zero gradient now, as the original's
    two cancelling backward passes would have. Only for modules whose
    forward is deterministic and stateless (gradfix checks that before
    emitting it). The module's own parameters are untouched.
    """
    params = dict(module.named_parameters())
    if isinstance(scale, (int, float)) and scale == 0:
        for p in params.values():
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
        replaced = {name: p.detach() for name, p in params.items()}
    else:
        replaced = {name: grad_scale(p, scale) for name, p in params.items()}
    return torch.func.functional_call(module, replaced, args, kwargs)
