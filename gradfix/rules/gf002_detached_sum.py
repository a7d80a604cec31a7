"""GF002 detached-sum: two terms of one sum that evaluate the same function with complementary `.detach()`.

## What it does
Finds a sum (`+`/`-`, any depth) with two terms `a * f(x.detach(), y)` and
`b * f(x, y.detach())` — the same callee on the same arguments, each with a
different operand stop-gradiented. The VQ-VAE codebook and commitment losses
are the classic case:

    vq_loss = F.mse_loss(z_q, z_e.detach()) + beta * F.mse_loss(z_q.detach(), z_e)

The function may be a pure tensor method whose receiver holds the operands,
`(z_q - z_e.detach()).pow(2).mean() + beta * (z_q.detach() - z_e).pow(2).mean()`.
A term may also be a name defined above in the same block by
`name = coef * f(...)`, the spelling most VQ-VAE code uses:

    q_latent = F.mse_loss(z_q, z_e.detach())
    e_latent = F.mse_loss(z_q.detach(), z_e)
    loss = recon + q_latent + COMMITMENT_COST * e_latent

The name may be reached through up to three names, each defined as a
coefficient times the one below it (`commitment = COMMITMENT_COST * e_latent`,
then `vq = q_latent + commitment`); a link nothing else reads is removed by
the fix, one read elsewhere is kept. A term may be held in an attribute of a
name (`self.commitment_loss = F.mse_loss(...)`, summed as
`self.commitment_loss`): found, but the fix is always unsafe, because code
outside the function may read the attribute as a tensor, and after the
rewrite it holds the value without gradient.

A term's name may be bound in both branches of an `if`/`else` that stands
between the other term's definition and the sum, each branch by
`name = c * f(...)` as its last binding there, with its own coefficient
(issue 12):

    q_latent = F.mse_loss(z_q, z_e.detach())
    if self.use_ema:
        e_latent = F.mse_loss(z_q.detach(), z_e)
    else:
        e_latent = F.mse_loss(z_q.detach(), z_e) * WARMUP_SCALE
    loss = recon + q_latent + BETA * e_latent

Not followed: an `elif` chain, an `if` without `else` or with a branch
that does not bind the name so, a branch on the `if`'s line, an `if` above
the other term's definition, both terms bound in the branches, and a term
held in an attribute. Not reported when the other term's name is read
between its definition and a branch's evaluation (the test included: the
rewrite moves its binding there), or when an operand is changed there.

Coefficients, operands and symmetric argument swaps are recognised as in
GF001 (`gradfix rule GF001`). An operand rebound after both definitions (the
straight-through estimator's `z_q = z + (z_q - z).detach()` before the sum)
changes neither term: the one evaluation replaces the earlier definition. Not
reported when an operand is rebound or modified between the two definitions,
modified in place between them and the sum, or when the sum is evaluated only
conditionally (a comprehension, `x if c else y`, `and`/`or`). Two names
summed in several statements (`loss1 = rec - s + p`, `loss2 = s - p + rec`)
are one finding, reported at the first sum.

## Why it is costly
Both terms compute the same value, with the same forward and backward cost.
One evaluation with per-operand gradient scaling gives the same value and the
same gradients at half the cost of `f`.

## Example and rewrite
    vq_loss_term = F.mse_loss(z_q, grad_scale(z_e, beta))
    vq_loss = vq_loss_term + (beta * vq_loss_term).detach()

The one evaluation `m = f(grad_scale(x, b), grad_scale(y, a))` carries the
gradients; the detached correction `((a + b - 1) * m).detach()` restores the
loss value `(a + b) * f` without touching them, so the value is exact too
(logged losses do not change). The evaluation is hoisted into a statement of
its own just before the one holding the sum; for terms defined by name it
replaces the earlier definition (`q_latent = F.mse_loss(z_q,
grad_scale(z_e, COMMITMENT_COST))`), and a name read elsewhere is rebuilt as
a detached value of the one evaluation: the same value, without gradient.

For a name bound in both branches of an `if`/`else`, the branch's coefficient
is known only in the branch, so each branch gets its own one evaluation where
it evaluated `f` (the operand live in its term scaled by that branch's
coefficient), and the branch's name is rebuilt from it, detached, keeping the
branch's value:

    if self.use_ema:
        q_latent = F.mse_loss(z_q, grad_scale(z_e, BETA))
        e_latent = q_latent.detach().clone()
    else:
        q_latent = F.mse_loss(z_q, grad_scale(z_e, BETA * WARMUP_SCALE))
        e_latent = q_latent.detach() * WARMUP_SCALE
    loss = recon + q_latent + BETA * e_latent

The other term's definition moves into each branch as that evaluation (its
name, or a new one with the name rebuilt detached after it where it is read
elsewhere). The sum keeps the branch term (its value, without gradient) and
the other term becomes the one evaluation with a correction for its own
coefficient only, `m + ((a - 1) * m).detach()`, the same in both branches: no
per-branch correction and no coefficient held in a name (which, bound in two
branches, would not be a proven number).

Opt-in (not in the default selection): a sum of this kind is often written
on purpose for readability, and the gain is one evaluation of `f`.

## Fix safety
Safe under the same proven conditions as GF001 (a parameter-free,
deterministic callee; pure calls in the arguments; numeric coefficients), and
when every other call in the statement is one that cannot be affected by
evaluating `f` earlier (proven-pure functions, torch.nn modules of the file).
For terms defined by name, every read of a name other than its term in the
sum must end in a value (`e.item()`, `float(e)`, `e.detach()`, an f-string,
`print(e)`): a name also read as a tensor (`total = loss + 0.1 * e`, a
second sum, `return e`) loses that read's gradient when rebuilt detached,
and the fix is unsafe, naming the line. A name bound in both branches of an
`if` is always rebuilt, so the same holds for its every read. Its one
evaluation reads every coefficient in the branch: a call not proven harmless
between the other definition and the branch's evaluation (the `if`'s test,
the branch's statements before it), or a coefficient bound only after it,
makes the fix unsafe. The rewrite removes a term's name
that nothing else reads: `locals()`, `vars()`, `dir()`, `eval`, `exec` or
`globals()` in the function may read it by its string (a metrics dict built
from `locals()`), and make the fix unsafe. Otherwise unsafe, and the message
names the unproven condition.
"""

from __future__ import annotations

import ast
import re

from gradfix import prechecks

CODE = "GF002"
NAME = "detached-sum"
SUMMARY = "Two terms of one sum evaluate the same function with complementary `.detach()`"
DEFAULT = False
FIXABLE = "sometimes"
REQUIRED_TOKENS = (prechecks.two_stop_gradients,)

# A stop-gradient spelling in unparsed source (`exprs.detach_receiver`'s spellings; `ast.unparse`
# writes no spaces inside them).
_STOP = re.compile(r"\.clone\(\)\.detach_?\(\)|\.detach\(\)(?:\.clone\(\))?|\.data\.clone\(\)|\.data(?![\w.(])")


def might_match(data: bytes, text: bytes, state: dict) -> bool:
    """Precheck with CPython's parser: some function (or the module) holds two calls of the same
    callee on the same arguments modulo stop-gradients (in any order: swapped symmetric calls),
    written differently — the necessary shape of a complementary pair. Without it, every file that
    calls `.detach()` twice went through libcst (150 files of torch's sources, minutes)."""
    tree = prechecks.tree(data, state)  # one parse per file, shared by every precheck
    if tree is None:
        return True  # left to the parser to report
    # Only the calls that hold a stop-gradient in an argument are unparsed: mark the ancestors of
    # every `.detach()`-like call once, then look at the marked calls. Only the statements whose
    # lines hold a marker are walked (a class's statements one by one): most of a file holds none.
    parents = {}
    stops = []
    pending = []
    statements = list(tree.body)
    while statements:
        statement = statements.pop()
        if isinstance(statement, ast.ClassDef):
            statements.extend(statement.body)
        elif _MARKER.search(prechecks.lines_of(statement, text, state)) is not None:
            pending.append(statement)
    while pending:  # one traversal (`ast.walk` and then each node's children would be two)
        node = pending.pop()
        for child in ast.iter_child_nodes(node):
            parents[child] = node
            pending.append(child)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("detach", "detach_"):
            if isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and node.args:
                return True  # `torch.detach(x)`: rare; the key below strips only the method spellings
            stops.append(node)
        elif isinstance(node, ast.Attribute) and node.attr == "data" and _data_operand(node, parents):
            stops.append(node)
    marked = set()
    for stop in stops:
        node = stop
        while node in parents and id(parents[node]) not in marked:
            node = parents[node]
            marked.add(id(node))
    seen: dict = {}
    for node in parents:
        if not (isinstance(node, ast.Call) and id(node) in marked):
            continue
        args = [ast.unparse(a) for a in node.args] + sorted(f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords)
        func = node.func
        if not any(_STOP.search(a) for a in args):
            # A method whose receiver holds the stop-gradient (`(z_q - z.detach()).pow(2)`):
            # the receiver is one more operand, and the method's name the callee.
            if not isinstance(func, ast.Attribute) or not _STOP.search(ast.unparse(func.value)):
                continue
            args = [ast.unparse(func.value)] + args
            func = ast.Name(id="." + func.attr)
        scope = parents.get(node)
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            scope = parents.get(scope)
        key = (id(scope), ast.dump(func), tuple(sorted(_STOP.sub("", a) for a in args)))
        written = tuple(args)
        if seen.setdefault(key, written) != written:
            return True
    return False

# Any stop-gradient marker in a statement's lines (`detach` or `X.data` as `prechecks.DATA_STOP` reads it).
_MARKER = re.compile(rb"detach|" + prechecks.DATA_STOP.pattern)


def _data_operand(node, parents: dict) -> bool:
    """`X.data` read as an operand (`exprs.data_stop`): not `torch.utils.data`, not a callee
    (`x.data()`) and nothing taken from it but `.clone()` (`ds.data.shape` is a field)."""
    import ast

    if isinstance(node.value, ast.Attribute) and node.value.attr == "utils":
        return False
    parent = parents.get(node)
    if isinstance(parent, ast.Call) and parent.func is node:
        return False
    return not (isinstance(parent, ast.Attribute) and parent.attr != "clone")


# The visitor, named here and imported by the registry only for a file that passes the precheck:
# it needs libcst, which a run where no file is parsed never imports.
VISITOR = "gradfix.rules._gf002_detached_sum_impl:Visitor"
