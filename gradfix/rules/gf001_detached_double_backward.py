"""GF001 detached-double-backward: the same function evaluated twice with complementary `.detach()`, both backpropagated.

## What it does
Finds, inside one straight-line block (a module, function, loop or branch
body), two losses that evaluate the same callee on the same arguments, each
with a different operand stop-gradiented by `.detach()`, where both losses are
backpropagated and the first `backward` keeps the graph:

    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()

Recognised spellings: `loss = ...` then `loss.backward(...)` (the loss may
be held in an attribute, `self.loss_G`, or a dict item under a literal key,
`losses["adv"]`: then the fix is unsafe, since code outside the function may
read the rebuilt value as a tensor), inline
`f(...).backward(...)`, `scaler.scale(loss).backward(...)` with the same
scaler, Lightning's `self.manual_backward(loss, ...)`,
`torch.autograd.backward(loss, ...)` and Accelerate's `accelerator.backward(loss, ...)`
(a name bound only to `accelerate.Accelerator(...)`; its fix is never safe: under
DeepSpeed each call also steps the optimizer) (the rewrite keeps the spelling); the
pre-0.4 `retain_variables=True`, read as the `retain_graph=True` it meant (alone,
the literal `True`; its fix is never safe, below); coefficients `-f(...)`, `c * f(...)`, `f(...) * c`, `f(...) / c` with
numbers, names or attributes; operands that are names, attributes or
subscripts, stop-gradiented by `.detach()` (or `torch.detach(x)`, or, with a copy,
`.detach().clone()`, `.clone().detach()`, `.clone().detach_()`; a list item by
item, `[p.detach() for p in prior]`, safe where `prior` is proven a list or
tuple; the legacy `x.data`, safe where `x` is proven a tensor: passed as it is
to a torch function in the other evaluation), with the
`.detach()` anywhere inside an argument
(`torch.cat([x.detach(), y], 1)`), keyword arguments included; method calls
chained on the evaluation (`D(x.detach()).mean()`); a pure tensor method whose
receiver holds the stop-gradients (`(x.detach() - y).pow(2).mean()`); swapped arguments for
callees that are symmetric in value and gradient (`mse_loss`, `l1_loss`,
`smooth_l1_loss`, `huber_loss` and their modules, and pure helpers of the
file whose one `return` is `g(p, q) + g(q, p)`: `callees.symmetric_definition`).

## Why it is costly
Both evaluations compute the same value. Running `f` twice costs two forwards,
two backwards and a retained graph, where one of each gives the same gradients:
the operand detached in the first loss receives its gradient only from the
second, and the other way round. For an `f` that mixes its operands early (a
critic on `cat([x, y])`) and dominates the step that is up to 2x faster and
holds half of `f`'s activations. When each operand runs through its own chain
and they meet only at the end, the original already skips the detached
operand's backward: the gain is about 4/3 at most, and for a cheap elementwise
`f` nothing (the one backward then holds both operands' gradients at once, a
higher peak). `benchmarks/README.md` has the measurements.

## Example and rewrite
    from gradfix.autograd import grad_scale

    l1 = F.mse_loss(grad_scale(x, -1.0), y)
    l1.backward()

In general, with losses `a * f(x.detach(), y)` and `b * f(x, y.detach())`, the
rewrite is `f(grad_scale(x, b), grad_scale(y, a))` backpropagated once with the
second call's keyword arguments; an operand live in both calls gets `a + b` (0
gives zeros, not None); a factor of 1 needs no op. `grad_scale` is an identity
in the forward that scales only this one use's gradient, never a hook on `x`
itself (a hook would flip every other use of `x`). Loss values read later
(logging, `.item()`) are rebuilt as detached values of the one result (a
copy, `.detach().clone()`, where the value stands alone: it must not share
memory with the merged loss).

## Not reported (docs/design.md §1, E3, E7)
When anything between the two passes steps an optimizer, zeroes, reads or
clips gradients, runs another backward, modifies an operand in place, rebinds
an operand, the callee or a coefficient, changes grad mode, or can skip the
second loss (`return`, `break`, `continue`, `raise`); when the first backward
does not retain the graph; when either backward passes `gradient`, `inputs` or
`create_graph`; when the callee draws random numbers (dropout): the two
evaluations are then different computations.

When the callee is an `nn.Module` built in the same file from deterministic,
stateless layers (`nn.Sequential(nn.Linear(...), nn.ReLU(), ...)`), its
parameters took part in both evaluations and received (a+b)·∂f/∂θ; the
rewrite calls it as `scaled_params_call(D, a + b, ...)`, which gives them
exactly that (docs/design.md §2). With a+b = 0 (the seed) it runs the module on
detached parameters — no weight-gradient work — and zero-fills their `.grad`
where it was None, as the original's cancelling passes did.

## Fix safety
Safe only when proven exact: the callee is parameter-free and deterministic
(allowlisted `torch`/`torch.nn.functional` functions, loss modules built in
the same file, lambdas and functions of the same file that use only those)
or a module of deterministic layers built in the same file (module form),
every call inside the arguments is such a function, the coefficients are
numeric literals or names bound once to numbers, and only calls known to be
harmless stand between the passes. Otherwise the fix is unsafe and the
message names the unproven condition: a callee that owns trainable parameters
gets (a+b)·∂f/∂θ in the original (exactly 0 in the seed) but ∂f/∂θ after the
rewrite; a loss name read elsewhere as a tensor (`0.1 * l2 ** 2`,
`torch.autograd.grad(l2, x)`) is only a detached value after the rewrite
(reads as values, `.item()`, `float()`, f-strings, are fine); a file that
registers a gradient hook (`register_hook`, `register_full_backward_hook`,
`register_post_accumulate_grad_hook`, `register_multi_grad_hook`, ...) runs
it once instead of twice, on the sum of the two passes' gradients, which is
exact only for a linear, stateless hook (`g.clamp(...)` or a hook recording
gradients is not). Hooks registered in another module are not seen. The same
holds for a custom `torch.autograd.Function` defined in the file whose
`backward` gradfix cannot prove linear in its gradients and stateless (it
clips, normalises or takes the sign of its gradient, branches on it, calls an
unknown function with it, or stores into `ctx`): the message names its line
and the first unproven operation. A Function imported from another module is
not seen. A forward hook registered in the file (`register_forward_hook`,
`register_forward_pre_hook`, `register_module_forward_hook`, ...) runs at
every call of a module: a module callee (module form, or a loss module) runs
once after the rewrite where the original ran it twice, so any such hook
makes those fixes unsafe. Likewise a `__torch_function__` or a tensor
subclass defined in the file (its method overrides, its torch function hook
run at every call on its tensors: twice in the original, once after the
rewrite). A file that reaches its own module object (`import __main__`)
proves no module constant: neither a number coefficient nor a constant tensor
a callee reads. When the second backward does not retain the graph,
a later `backward()` or `torch.autograd.grad()` in the same function may go
through the part of the graph the first call kept alive, which the one
backward frees: unsafe. A function that calls `locals()`, `vars()`,
`globals()`, `eval` or `exec` may read the names the rewrite removes or
rebuilds: unsafe too. A backward call passing `retain_variables=True` (the name
of `retain_graph` before PyTorch 0.4) raises TypeError on every supported
torch, where the rewrite, which writes the kept call's retain as
`retain_graph=True`, runs: always unsafe, so the user confirms the intent.
"""

from __future__ import annotations

from gradfix import prechecks

CODE = "GF001"
NAME = "detached-double-backward"
SUMMARY = "Same function evaluated twice with complementary `.detach()`, both backpropagated"
DEFAULT = True
FIXABLE = "sometimes"
REQUIRED_TOKENS = (b"backward(", prechecks.retain_keyword, prechecks.two_stop_gradients)  # (the cheapest tests first)


def might_match(data: bytes, text: bytes, state: dict) -> bool:
    """Two backward sites in one block, the first retaining the graph (`gradfix.prechecks`); the two
    stop-gradients are REQUIRED_TOKENS' (`prechecks.two_stop_gradients`)."""
    return (
        text.count(b"backward") >= 2
        and prechecks.RETAIN_TRUE.search(text) is not None
        and prechecks.backward_retain(text)
        and prechecks.retained_backward_then_backward(data, state)
    )


# The visitor, named here and imported by the registry only for a file that passes the precheck:
# it needs libcst, which a run where no file is parsed never imports.
VISITOR = "gradfix.rules._gf001_detached_double_backward_impl:Visitor"
