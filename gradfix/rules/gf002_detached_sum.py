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
A loss weight the file binds only to numbers or to what a caller passes
(`self.beta = beta` in the constructor, `getattr(config, "beta", 0.25)`,
`args.beta`, a parameter) is taken to be a number or a one-element tensor
(`grad_scale` raises on several elements, never scales wrongly), and the
correction `m + beta * m.detach()` keeps its gradient where it requires grad;
bound in the file to anything else, computed by a property, or possibly
rebound between the one evaluation and the sum, it makes the fix unsafe.
Where the rewrite calls `.detach()` on the one evaluation's value (a nonzero
correction, a name rebuilt detached, a branch's name), that value must be
proven one tensor: a torch function or loss module of gradfix's lists, a pure
tensor method that gives a tensor (`.mean()`, not `.numel()` or `.size()`),
or a function of the file every `return` of which is one (a callee returning
`float(...)` or `len(a)` sums in the original and has no `.detach()`).
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
from bisect import bisect_left

from gradfix import prechecks

CODE = "GF002"
NAME = "detached-sum"
SUMMARY = "Two terms of one sum evaluate the same function with complementary `.detach()`"
DEFAULT = False
FIXABLE = "sometimes"
REQUIRED_TOKENS = (prechecks.two_stop_gradients,)
# `might_match` parses only the top-level statements holding a stop-gradient, or reads the whole
# tree another rule's precheck parsed: the prefilter runs it after those (`engine.prefilter`).
PRECHECK_PARSES_PIECES = True

def might_match(data: bytes, text: bytes, state: dict) -> bool:
    """Precheck with CPython's parser: some function (or the module) holds two calls of the same
    callee on the same arguments modulo stop-gradients (in any order: swapped symmetric calls),
    written differently — the necessary shape of a complementary pair. Without it, every file that
    calls `.detach()` twice went through libcst (150 files of torch's sources, minutes)."""
    # Only the top-level statements holding a marker are parsed (`prechecks.marked_tree`), and of those
    # not a definition holding only one: a pair is two calls of one scope, each with a stop-gradient.
    marked = prechecks.marked_tree(data, text, state, _MARKER, pairs=True)
    if marked is None:
        return True  # left to the parser to report
    tree, whole = marked
    found = _pair(tree, whole, text, state)
    if found is None:  # a call outside any function: `_summed` reads the whole module
        whole_tree = prechecks.tree(data, state)
        return True if whole_tree is None else bool(_pair(whole_tree, True, text, state))
    return found


def _pair(tree, whole: bool, text: bytes, state: dict):
    """Whether `might_match` finds a pair in `tree`; None when a marked call outside any function
    would need the whole module's tree and `tree` is not (`whole`)."""
    # Only the calls that hold a stop-gradient in an argument are compared: mark the ancestors of
    # every `.detach()`-like call once, then look at the marked calls. Only the statements whose
    # lines hold a marker are walked (a class's statements one by one): most of a file holds none.
    parents = {}
    stops = []
    pending = []
    lines: list = []  # the lines where the markers of the walked statements start
    statements = list(tree.body)
    while statements:
        statement = statements.pop()
        if isinstance(statement, ast.ClassDef):
            statements.extend(statement.body)
            continue
        found = _marker_lines(statement, text, state)
        # A pair is two calls of one scope, each stopping a gradient the other does not: two
        # stop-gradients, two markers. Every call in a function (its decorators, nested functions
        # and lambdas too) has its scope inside it, so a function whose lines hold fewer than two
        # markers holds no pair (most marked functions of a tree hold one).
        if len(found) >= (2 if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) else 1):
            pending.append(statement)
            lines.extend(found)
    lines.sort()
    while pending:  # one traversal (`ast.walk` and then each node's children would be two)
        node = pending.pop()
        for child in ast.iter_child_nodes(node):
            # A statement whose lines hold no marker holds no stop-gradient, and so no call of a
            # pair: neither it nor what it holds is walked (most of a marked function).
            if isinstance(child, ast.stmt) and not _holds_marker(child, lines):
                continue
            parents[child] = node
            pending.append(child)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("detach", "detach_"):
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
        func = node.func
        operands = [("", _Normal(a)) for a in node.args] + [(f"{k.arg}=", _Normal(k.value)) for k in node.keywords]
        if not any(normal.stops for _, normal in operands):
            # A method whose receiver holds the stop-gradient (`(z_q - z.detach()).pow(2)`):
            # the receiver is one more operand, and the method's name the callee.
            if not isinstance(func, ast.Attribute):
                continue
            squared = func.attr == "pow" and len(node.args) == 1 and not node.keywords
            # (`(a - b).pow(2)` as `(a - b) ** 2`: the two sides in either order)
            receiver = _Normal(ast.BinOp(left=func.value, op=ast.Pow(), right=node.args[0]) if squared else func.value)
            if not receiver.stops:
                continue
            operands.insert(0, ("", receiver))
            func = ast.Name(id="." + func.attr)
        scope = parents.get(node)
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            scope = parents.get(scope)
        if scope is None and not whole:
            return None
        # In any order (swapped symmetric calls): sorted by their text modulo stop-gradients.
        signature = sorted(((name + normal.text, normal.stops) for name, normal in operands), key=lambda item: item[0])
        key = (id(scope), ast.dump(func), tuple(text for text, _ in signature))
        earlier = seen.setdefault(key, [])
        for other, call in earlier:
            if _complementary(other, signature) and _summed(tree if scope is None else scope, (call, node), parents):
                return True
        earlier.append((signature, node))
    return False


def _marker_lines(statement, text: bytes, state: dict) -> list:
    """The lines where a stop-gradient marker starts in a statement's lines (`prechecks.lines_of`:
    from its first decorator's), numbered as the file's."""
    chunk = prechecks.lines_of(statement, text, state)  # (its lines joined by `\n`)
    line = prechecks.first_line(statement)
    found = []
    at = 0
    for match in _MARKER.finditer(chunk):
        line += chunk.count(b"\n", at, match.start())
        at = match.start()
        found.append(line)
    return found


def _holds_marker(statement, lines: list) -> bool:
    """Whether a marker starts on one of the lines a statement spans (from its first decorator's)."""
    at = bisect_left(lines, prechecks.first_line(statement))
    return at < len(lines) and lines[at] <= statement.end_lineno


def _summed(scope, calls, parents: dict) -> bool:
    """Some `+`/`-` of the scope may add both calls' values (the rule's pairs are terms of one
    sum, `_sum_roots`): it holds each call, or reads a name or attribute that may hold it — one
    its statement binds (`e = beta * f(...)`, in any branch, a walrus), or one bound from such a
    name, four links deep (`c = beta * e`; the rule follows three). Texts are compared, scopes
    are not: an overestimate."""
    held = []
    for call in calls:
        names: set = set()
        node = call
        while node in parents and not isinstance(node, ast.stmt):
            node = parents[node]
            if isinstance(node, ast.NamedExpr):
                names.add(ast.unparse(node.target))
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            names |= _bound(node)
        held.append(names)
    assignments = [n for n in ast.walk(scope) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and n.value is not None]
    for _ in range(4):
        for assignment in assignments:
            read = _read_texts(assignment.value)
            for names in held:
                if read & names:
                    names |= _bound(assignment)
    for node in ast.walk(scope):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            inside = {id(n) for n in ast.walk(node)}
            read = _read_texts(node)
            if all(id(call) in inside or read & names for call, names in zip(calls, held)):
                return True
    return False


def _bound(assignment) -> set:
    """The texts of every name, attribute and subscript an assignment binds (tuple targets item by item)."""
    targets = assignment.targets if isinstance(assignment, ast.Assign) else [assignment.target]
    found = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
                found.add(ast.unparse(node))
    return found


def _read_texts(node) -> set:
    return {ast.unparse(n) for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))}


def _complementary(first: list, second: list) -> bool:
    """Two calls equal modulo stop-gradients (their operands' `_Normal` texts, sorted alike) each
    stop a gradient the other does not: a stop-gradient stands in one where the other has none.
    Two operands alike modulo stop-gradients make the order ambiguous: then any differing pair is."""
    texts = [text for text, _ in first]
    if len(set(texts)) != len(texts):
        return first != second
    extra = [a - b for (_, a), (_, b) in zip(first, second)]
    missing = [b - a for (_, a), (_, b) in zip(first, second)]
    return any(extra) and any(missing)


class _Normal:
    """An operand written out like `ast.dump` (contexts left out), each stop-gradient spelling
    replaced by its operand (`_stop_operand`), and where in that text each stop-gradient stood
    (`stops`: (start, end) of its operand's text). Parentheses are not nodes: `(a - b).detach()` and
    `a - b` agree."""

    def __init__(self, node) -> None:
        self.parts: list = []
        self.size = 0
        self.stops: set = set()
        self._add(node, True)
        self.text = "".join(self.parts)

    def _write(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def _append(self, other: "_Normal") -> None:
        """`other`'s text written here, its stop-gradients moved along with it."""
        start = self.size
        self._write(other.text)
        self.stops |= {(a + start, b + start) for a, b in other.stops}

    def _add(self, node, data_operand: bool) -> None:
        if isinstance(node, list):
            self._write("[")
            for index, item in enumerate(node):
                self._write(", " if index else "")
                self._add(item, True)
            self._write("]")
            return
        if not isinstance(node, ast.AST):
            self._write(repr(node))
            return
        found = _stop_operand(node, data_operand)
        if found is not None:
            inner, stop, inner_data_operand = found
            start = self.size
            self._add(inner, inner_data_operand)
            if stop:
                self.stops.add((start, self.size))
            return
        if _squared_difference(node):
            # `(a - b) ** 2` and `(b - a) ** 2` are one computation (`exprs.align_squared`): the
            # two sides in the order of their texts.
            first, second = sorted((_Normal(node.left.left), _Normal(node.left.right)), key=lambda side: side.text)
            self._write("SquaredDifference(")
            self._append(first)
            self._write(", ")
            self._append(second)
            self._write(")")
            return
        self._write(type(node).__name__ + "(")
        first = True
        for name, value in ast.iter_fields(node):
            if name == "ctx":
                continue
            self._write(("" if first else ", ") + name + "=")
            first = False
            # `X.data` is a stop-gradient only as an operand (`_data_operand`): not `x.data.shape`, not `x.data()`.
            self._add(value, not ((isinstance(node, ast.Attribute) and name == "value") or (isinstance(node, ast.Call) and name == "func")))
        self._write(")")


def _squared_difference(node) -> bool:
    """`(a - b) ** 2` (the literal exponent 2)."""
    return (
        isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant)
        and type(node.right.value) in (int, float) and node.right.value == 2
        and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Sub)
    )


def _stop_operand(node, data_operand: bool):
    """(operand, whether it is a stop-gradient, whether a `.data` there is one) for a spelling that
    `_Normal` writes as its operand: `X.detach()`, `X.detach_()`, `torch.detach(X)`, `X.data` (where
    `data_operand`), `[v.detach() for v in X]`, and, as no stop-gradient, `X.clone()` and `[v for v
    in X]`; else None. More spellings than `exprs.detach_receiver` reads (`X.detach_()`, a
    `PackedSequence`'s `.data`): two calls that pair up by its spellings pair up by these."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        func = node.func
        if func.attr in ("detach", "detach_") and not node.args:
            return func.value, True, False
        if func.attr == "clone" and not node.args:
            return func.value, False, True
        if func.attr == "detach" and isinstance(func.value, ast.Name) and func.value.id == "torch" and len(node.args) == 1:
            return node.args[0], True, True
    elif isinstance(node, ast.Attribute) and node.attr == "data" and data_operand:
        if not (isinstance(node.value, ast.Attribute) and node.value.attr == "utils"):
            return node.value, True, False
    elif isinstance(node, ast.ListComp) and len(node.generators) == 1:
        clause = node.generators[0]
        if not clause.ifs and isinstance(clause.target, ast.Name):
            element, stop, data = node.elt, False, True
            while True:
                found = None if isinstance(element, ast.ListComp) else _stop_operand(element, data)
                if found is None:
                    break
                element, inner_stop, data = found
                stop = stop or inner_stop
            if isinstance(element, ast.Name) and element.id == clause.target.id:
                return clause.iter, stop, True
    return None


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
