"""GF004 detached-terms-across-losses: one computation with complementary `.detach()` in two losses of one backward run.

## What it does
Finds a run of backward calls (every call but the last keeps the graph, and
nothing between them steps, zeroes, reads or clips gradients: the condition
of GF003), or one backward call, whose losses, expanded through the
statements that build them, hold two terms that are the same computation up
to complementary `.detach()`, one reaching the objective through one loss and
one through another. The min-max association discrepancy of
anomaly-detection transformers is the common case:

    s_loss, p_loss = 0.0, 0.0
    for i in range(len(series)):
        s_loss += torch.mean(kl(series[i], prior[i].detach()))
        p_loss += torch.mean(kl(series[i].detach(), prior[i]))
    s_loss = s_loss / len(series)
    p_loss = p_loss / len(series)
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()

Both terms may also reach one loss, when each comes through a loop from a
statement of its own: DCdetector's `loss = prior_loss - series_loss`,
`loss.backward()`, with the accumulators above. (A pair written out in one
sum, or in names that each hold one term, is GF002's summed form, opt-in.)

The expansion follows `=`, `+=`, `-=`, `*=`/`/=` by a coefficient, tuple
assignments, sums and differences, products and quotients by numbers, names,
attributes or `len(...)`, loops that accumulate with `+=` or append to a
list once per iteration (reduced by `sum(lst)`, `torch.stack(lst).mean()`,
`torch.mean(torch.stack(lst))`), one level of loops nested in such a loop
(its statements run once per iteration of both: a pair in the inner body is
fixed there), and `with` bodies. A loop may reset its sums
in an `if` (the first-iteration idiom), followed as the accumulating branch
when every sum of the loop is reset there alike; the fix changes both branches:

    for u in range(len(prior)):
        if u == 0:
            series_loss = torch.mean(kl(series[u], prior[u].detach()))
            prior_loss = torch.mean(kl(series[u].detach(), prior[u]))
        else:
            series_loss += torch.mean(kl(series[u], prior[u].detach()))
            prior_loss += torch.mean(kl(series[u].detach(), prior[u]))

Two reduced comprehensions with the same `for u in range(...)` clause in one
block pair like one loop's terms, when each element is one term (`sum([...])`,
`sum(generator)`, `torch.stack([...]).mean()` or `.sum()`); the fix fuses them:

    series_loss = sum([torch.mean(kl(series[u], prior[u].detach())) for u in range(n)])
    prior_loss = sum([torch.mean(kl(series[u].detach(), prior[u])) for u in range(n)])

becomes

    kl_shared = [torch.mean(kl(series[u], grad_scale(prior[u], -1.0))) for u in range(n)]
    series_loss = sum(kl_shared)
    prior_loss = sum([v.detach() for v in kl_shared])

A clause over names, `for s, p in zip(series, prior)` (or `enumerate(...)`, or a
name), is fused alike when each element is one term; the fix is safe only where
the function's bindings prove each name a list or tuple (`series, prior = [],
[]`, a comprehension, `list(...)`): an iterator is exhausted by the original's
first comprehension, whose second then sums nothing.
An element of several parts (the symmetrised discrepancy, `kl(s[u], p[u].detach())
+ kl(p[u].detach(), s[u])`) over `range(N)` is expanded, and its term takes its
iteration's item of the list: `kl_shared[u]`, `kl_shared[u].detach()`.

Two `for` loops of one block written `for u in range(N)` alike, one after the
other, pair like one loop's terms too (iteration `u` of each sees the same
`u`), when nothing in either loop body, nor between the loops, may change an
operand, the range or `u`. The fix evaluates once in the first loop and keeps
what the second loop's term takes in a list made before the first loop:

    kl_values = []
    for u in range(n):
        kl_shared = torch.mean(kl(series[u], grad_scale(prior[u], -1.0)))
        kl_values.append(kl_shared.detach())
        series_loss += kl_shared
    for u in range(n):
        prior_loss += kl_values[u]

(`range(N)` with one argument only: item `u` of the list is iteration `u`'s;
a term of a reset branch is not fused.) A `.detach()` hidden
in a small helper is seen too: a call of a function of the same module (or
of a method of the enclosing class, on `self`) that is proven pure, has
plain positional parameters and returns one expression is expanded as that
expression (one level deep), and the rewrite inlines it where it pairs:

    def assoc(p, q):
        return torch.mean(kl(p, q.detach())) + torch.mean(kl(q.detach(), p))

    s_loss += assoc(series[i], prior[i])
    p_loss += assoc(prior[i], series[i])

Otherwise both terms must be
evaluated in the same loop iteration (the same loop body) or both outside any
loop, under the same `with` context (docs/design.md §1, E4). Symmetric callees may
swap their arguments, as in GF001.

## Why it is costly
Both terms compute the same value, forward and backward: `f` runs twice per
step (twice per loop iteration), and the first loss's graph is retained for
the second backward. Only the gradients differ, and gradients are linear: the
objective gives one operand `a·∂f` and the other `b·∂f`.

## Example and rewrite
    for i in range(len(series)):
        kl_shared = torch.mean(kl(series[i], grad_scale(prior[i], -1.0)))
        s_loss += kl_shared
        p_loss += kl_shared.detach()

    ...
    (loss1 + loss2).backward()

One evaluation, placed just before the first term's statement, carries both
gradients: scaled by the ratio `b/a` of the two terms' coefficients in the
objective, the operand the first term detached receives exactly what the
second term gave it. The second term becomes the same value, detached, so
every loss, accumulator and logged value keeps its value. Where `b/a` would
divide by a name and `a/b` would not (`loss = p_loss - k * s_loss`, with `k =
0.0` switching the term off), the second term's computation is the one
evaluation, scaled by `a/b` (`grad_scale(..., -k)`), and the first becomes its
detached value: the fix never divides by what may be zero. A run of backward
calls becomes one backward of the sum of its losses, as GF003 would write it:
that is part of this fix, since a loss left with only detached terms could
not be backpropagated on its own. Together: one forward of `f` per pair and
one backward.

## Not reported
When the two terms are in different loops (other than two loops over one
`range(N)`, above) or different iterations, under
different `with` contexts, or in one loss outside a loop or in one statement
(GF002's summed form);
when a loss is used non-linearly on the way (`s_loss ** 2`, `s_loss /
p_loss`), when an operand or a coefficient may change between the two
evaluations, when the callee draws random numbers, and for everything GF003
does not merge (a step or `zero_grad` between the backward calls,
`create_graph=True`, `inputs=`, `gradient=`). Where GF001 applies (two losses
that are each one call), GF001's rewrite is the better one.

## Fix safety
Safe when the callee is proven parameter-free and deterministic (or a
deterministic module, called through `scaled_params_call`), the coefficient
ratio is a number or a product of names bound once to numbers (it never
divides by a name that may be zero, nor does the carrying term's coefficient
divide by one bound to zero), nothing between the two evaluations can modify
an operand (through an alias either),
and every name that carries the terms (`s_loss`, `loss1`, ...) is read
elsewhere only as a value (`.item()`, `.detach()`, `float()`, f-strings,
`print`). Otherwise unsafe, and the message names the unproven condition: a
name kept as a tensor (`self.last = loss1`, `return s_loss`) carries the
other loss's gradient after the rewrite if something backpropagates it later,
and so may a carrier declared `global` or `nonlocal`, whose reads in other
scopes are not seen. The one evaluation reads the ratio's names where the
first term was: a coefficient assigned or rebound after it (`lam = 3.0` just
before `loss = p_loss - lam * s_loss`) would be unbound there, or hold another
value, and the fix is unsafe, naming the line. `locals()`, `vars()`, `dir()`,
`eval`, `exec` or `globals()` in the function may read the names the rewrite
adds or changes: unsafe too.
When the rewrite also merges the run's backward calls, a gradient hook
registered in the file (`register_hook`, `register_full_backward_hook`, ...)
makes it unsafe too: it runs once on the sum instead of once per pass, exact
only for a linear, stateless hook. Hooks registered in another module are not
seen. A backward call passing the pre-0.4 `retain_variables=True` (read as the
`retain_graph=True` it meant) raises TypeError on every supported torch, where
the rewrite, which writes it `retain_graph=True`, runs: always unsafe.
"""

from __future__ import annotations

import re
from typing import Optional

from gradfix import prechecks

CODE = "GF004"
NAME = "detached-terms-across-losses"
SUMMARY = "Two losses of one backward run, or two accumulators of one loss, hold the same computation with complementary `.detach()`"
DEFAULT = True
FIXABLE = "sometimes"
# No `retain_graph`: one backward of a sum of losses (`(loss1 + loss2).backward()`) qualifies too.
REQUIRED_TOKENS = (b"backward(", prechecks.two_stop_gradients)  # (the cheap substring tokens first)
# Where both apply, GF001's rewrite (one forward and one backward) is the better one.
SUPERSEDED_BY = ("GF001",)


def might_match(data: bytes, text: bytes, state: dict) -> bool:
    """Two terms with `.detach()`, and a retaining backward run, one plain backward of a sum, or a
    loop that may hold a pair before a plain backward (one loss accumulated over a loop). (The two
    stop-gradients are REQUIRED_TOKENS': `prechecks.two_stop_gradients`.)"""
    if prechecks.RETAIN_TRUE.search(text) is not None and prechecks.backward_retain(text):
        if prechecks.retained_backward_then_backward(data, state):
            return True
    if prechecks.backward_of_call(text) and _backward_of_sum(data, text, state):
        return True
    return _loop_before_backward(data, text, state)


def _backward_of_sum(data: bytes, text: bytes, state: dict) -> bool:
    """Some function (or the module) holds a plain `(a + b).backward()` (`scaler.scale(a - b).backward()`,
    `self.manual_backward(a + b)`)
    statement and two `.detach()` calls of its own. True when the file does not parse: the parser reports it.

    The `.detach()` calls are counted in the text of the function's lines, nested functions,
    comments and strings included: an overcount only lets a file through to the rules.
    """
    import ast

    accelerate = prechecks.accelerate_possible(text)  # (once per file: it scans the text)
    blocks = prechecks.statement_blocks(data, state)
    if blocks is None:
        return True
    for block, scope in blocks:
        for statement in block:
            site = prechecks.backward_site(statement, accelerate)
            if site is None:
                continue
            receiver = site[0]
            if type(receiver) is ast.Call and len(receiver.args) == 1 and type(receiver.func) is ast.Attribute and receiver.func.attr == "scale":
                receiver = receiver.args[0]
            if type(receiver) is not ast.BinOp or type(receiver.op) not in (ast.Add, ast.Sub):
                continue
            if type(scope) is ast.Module:
                return True  # the module's own count: at least two, as `_gf004_might_match` checked
            if prechecks.stop_gradient_count(prechecks.lines_of(scope, text, state)) >= 2:
                return True
    return False


def _loop_before_backward(data: bytes, text: bytes, state: dict) -> bool:
    """Some statement list holds a `for` (or a `with` around one), or statements with
    comprehensions, that may evaluate two terms with `.detach()`, and after it a plain
    `X.backward(...)` statement. "May": the loops' lines hold
    `detach` twice (in one loop, or in two, which the rule may fuse), or a loop calls a function
    of this file whose lines hold it (a helper GF004 inlines).
    True when the file does not parse: the parser reports it. A loop's lines are read only in a
    block that backpropagates: most blocks do not."""
    import ast

    blocks = prechecks.statement_blocks(data, state)
    if blocks is None:
        return True
    accelerate = prechecks.accelerate_possible(text)
    helpers: Optional[re.Pattern] = None
    for block, _ in blocks:
        last = max((i for i, s in enumerate(block) if prechecks.plain_backward(s, accelerate) is not None), default=0)
        in_comprehensions = 0  # `detach` in the lines of simple statements holding a comprehension
        in_loops = 0  # `detach` in the lines of the block's loops (two loops over one range are fused)
        for statement in block[:last]:
            kind = type(statement)
            if kind not in (ast.For, ast.With) and any(type(n) in (ast.ListComp, ast.GeneratorExp) for n in ast.walk(statement)):
                in_comprehensions += prechecks.stop_gradient_count(prechecks.lines_of(statement, text, state))
                if in_comprehensions >= 2:
                    return True  # reduced comprehensions that may hold a pair (fused by the rule)
                continue
            if kind is not ast.For and not (kind is ast.With and any(type(n) is ast.For for n in ast.walk(statement))):
                continue
            loop = prechecks.lines_of(statement, text, state)
            in_loops += prechecks.stop_gradient_count(loop)
            if in_loops >= 2:
                return True
            if helpers is None:
                names = [
                    s.name.encode()
                    for b, _ in blocks
                    for s in b
                    if type(s) in (ast.FunctionDef, ast.AsyncFunctionDef) and prechecks.stop_gradient_count(prechecks.lines_of(s, text, state))
                ]
                helpers = re.compile(rb"\b(?:" + b"|".join(map(re.escape, names)) + rb")" + prechecks.GAP + rb"\(") if names else re.compile(rb"(?!)")
            if helpers.search(loop) is not None:
                return True
    return False


# The visitor, named here and imported by the registry only for a file that passes the precheck:
# it needs libcst, which a run where no file is parsed never imports.
VISITOR = "gradfix.rules._gf004_detached_terms_across_losses_impl:Visitor"
