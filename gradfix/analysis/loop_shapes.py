"""The shapes of loops and comprehensions the objective's expansion follows, read from the tree alone.

`objective.py` walks a block with the values its names hold; these helpers only look at code: what
a loop body is made of (`flattened`: a reset-or-accumulate `if` as its accumulating branch, a nested
loop as its statements), what an accumulation reads and binds, which reduced comprehensions and
`range(...)` clauses give the same iterations twice. No state, no metadata.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Set, Tuple

import libcst as cst

from gradfix.analysis.exprs import access_path, code_of, same_expr, strip_parens
from gradfix.analysis.walk import walk_tree


def comprehension_reduction(node: cst.Call) -> Optional[Tuple[cst.CSTNode, bool]]:
    """(the comprehension, whether the reduction is a mean) for `sum(<comp>)`, `torch.stack(<list
    comp>).mean()`/`.sum()`, `torch.mean(torch.stack(<list comp>))`/`torch.sum(...)` over a
    comprehension of one `for NAME in range(...)` clause (`stable_range`), or of one clause over
    names (`for s, p in zip(series, prior)`: `iterated_sequences`), no condition; else None."""
    func = node.func
    comp: Optional[cst.BaseExpression] = None
    mean = False
    if isinstance(func, cst.Name) and func.value == "sum" and len(node.args) == 1 and node.args[0].keyword is None:
        comp = node.args[0].value
        if not isinstance(strip_parens(comp), (cst.ListComp, cst.GeneratorExp)):
            return None
    elif isinstance(func, cst.Attribute) and func.attr.value in ("mean", "sum") and not node.args:
        comp, mean = stacked(func.value), func.attr.value == "mean"
    elif code_of(func).strip() in ("torch.mean", "torch.sum") and len(node.args) == 1 and node.args[0].keyword is None:
        comp, mean = stacked(node.args[0].value), code_of(func).strip() == "torch.mean"
    if comp is None or (node.args and node.args[0].star):
        return None
    if not isinstance(comp, cst.ListComp) and not (isinstance(comp, cst.GeneratorExp) and isinstance(func, cst.Name)):
        return None  # (`torch.stack` takes a list, not a generator)
    clause = comp.for_in
    if clause.inner_for_in is not None or clause.ifs or clause.asynchronous is not None:
        return None
    if isinstance(clause.target, cst.Name) and stable_range(clause.iter):
        return comp, mean
    return (comp, mean) if iterated_sequences(clause.iter) is not None and _plain_target(clause.target) else None


def iterated_sequences(node: cst.BaseExpression) -> Optional[List[cst.BaseExpression]]:
    """The names a comprehension clause iterates when it is a name `xs`, `zip(xs, ys, ...)` or
    `enumerate(...)` of one of those (no other arguments); else None. Iterating it again gives
    the same items only where each name holds a list or a tuple (an iterator is exhausted by the
    first pass): the rule must prove that (`merge.MergeSafety.sequence`)."""
    node = strip_parens(node)
    if isinstance(node, cst.Name):
        return [node]
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.args):
        return None
    if any(arg.keyword is not None or arg.star for arg in node.args):
        return None
    if node.func.value == "zip":
        names = [strip_parens(arg.value) for arg in node.args]
        return names if all(isinstance(n, cst.Name) for n in names) else None  # type: ignore[misc]
    if node.func.value == "enumerate" and len(node.args) == 1:
        return iterated_sequences(node.args[0].value)
    return None


def _plain_target(target: cst.BaseExpression) -> bool:
    """A name, or a tuple of them at any depth (`i, (s, p)`), no starred part."""
    if isinstance(target, cst.Name):
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return bool(target.elements) and all(not isinstance(e, cst.StarredElement) and _plain_target(e.value) for e in target.elements)
    return False


def stable_range(node: cst.BaseExpression) -> bool:
    """`range(...)` whose arguments are numbers, names, attributes, `len(...)` of those and arithmetic."""
    node = strip_parens(node)
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "range"):
        return False
    return 1 <= len(node.args) <= 3 and all(arg.keyword is None and not arg.star and plain_bound(arg.value) for arg in node.args)


def positions(node: cst.BaseExpression) -> bool:
    """`range(N)` (one argument): each item is its position."""
    node = strip_parens(node)
    return stable_range(node) and len(node.args) == 1  # type: ignore[attr-defined]


def local_positions(node: cst.BaseExpression) -> bool:
    """`positions`, with a bound read from names only (`range(len(prior))`, `range(n)`), no attribute:
    what two loops must share to be fused. An attribute (`range(cfg.n)`) may be a property, or be
    changed through the object's `__dict__` between the loops, where no scan of stores sees it."""
    return positions(node) and not read_attributes(node)


def read_attributes(node: cst.BaseExpression) -> List[cst.Attribute]:
    """The attributes an iteration reads (`cfg.n` in `range(cfg.n)`): two evaluations of it may see
    two values (a property, a store through the object's `__dict__` between them)."""
    found: List[cst.Attribute] = []

    class Attributes(cst.CSTVisitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            found.append(attribute)
            return False

    walk_tree(node, Attributes())
    return found


def plain_bound(node: cst.BaseExpression) -> bool:
    node = strip_parens(node)
    if isinstance(node, (cst.Integer, cst.Name)):
        return True
    if isinstance(node, cst.Attribute):
        return plain_bound(node.value)
    if isinstance(node, cst.BinaryOperation):
        return plain_bound(node.left) and plain_bound(node.right)
    if isinstance(node, cst.UnaryOperation):
        return plain_bound(node.expression)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and len(node.args) == 1:
        value = strip_parens(node.args[0].value)
        return node.args[0].keyword is None and not node.args[0].star and isinstance(value, (cst.Name, cst.Attribute))
    return False


def normalised_clause(clause: cst.CompFor) -> str:
    """A comprehension clause's text with whitespace removed: clauses written alike compare equal."""
    return "".join(code_of(clause).split())


def summands(node: cst.BaseExpression, sign: int = 1) -> List[Tuple[cst.BaseExpression, int]]:
    """`a + (b - c)` -> [(a, 1), (b, 1), (c, -1)]; any other expression is its own one summand."""
    bare = strip_parens(node)
    if isinstance(bare, cst.BinaryOperation) and isinstance(bare.operator, (cst.Add, cst.Subtract)):
        right = -sign if isinstance(bare.operator, cst.Subtract) else sign
        return summands(bare.left, sign) + summands(bare.right, right)
    return [(node, sign)]


def stacked(node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`torch.stack(lst)` -> lst."""
    node = strip_parens(node)
    if isinstance(node, cst.Call) and code_of(node.func).strip() == "torch.stack" and len(node.args) == 1 and node.args[0].keyword is None:
        return node.args[0].value
    return None


def target_name(assign: cst.Assign) -> Optional[str]:
    if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
        return assign.targets[0].target.value
    return None


def append_target(expr: cst.Expr) -> Optional[str]:
    call = expr.value
    if (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "append"
        and isinstance(call.func.value, cst.Name)
        and len(call.args) == 1
        and call.args[0].keyword is None
        and not call.args[0].star
    ):
        return call.func.value.value
    return None


def self_reads(node: cst.BaseExpression, name: str) -> List[cst.Name]:
    found: List[cst.Name] = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                found.append(n)

    walk_tree(node, Collect())
    return found


def without_self(node: cst.BaseExpression, name: str) -> Optional[List[Tuple[cst.BaseExpression, int]]]:
    """`acc + a - b` (in any order) -> [(a, 1), (b, -1)]; None for any other use of `acc`."""
    parts = summands(node)
    own = [(part, sign) for part, sign in parts if isinstance(strip_parens(part), cst.Name) and strip_parens(part).value == name]  # type: ignore[attr-defined]
    if len(own) != 1 or own[0][1] != 1:
        return None
    rest = [(part, sign) for part, sign in parts if part is not own[0][0]]
    if any(self_reads(part, name) for part, _ in rest):
        return None
    return rest


def flattened(body: Sequence[cst.BaseStatement]) -> List[tuple]:
    """(statement, its statement list, its index there, its twin or None) for a loop body, with each
    reset-or-accumulate `if` (`reset_branches`) replaced by its accumulating branch's statements,
    each paired with its twin in the resetting branch, and each nested loop (`nested_body`) by the
    statements of its body. (The caller checked every `if` is one.)"""
    out: List[tuple] = []
    for index, statement in enumerate(body):
        inner = nested_body(statement)
        if inner is not None:
            out.extend((nested, inner, position, None) for position, nested in enumerate(inner))
            continue
        branches = reset_branches(statement) if isinstance(statement, cst.If) else None
        if branches is None:
            out.append((statement, body, index, None))
            continue
        resets, adds, add_body, _ = branches
        out.extend((add, add_body, position, reset) for position, (reset, add) in enumerate(zip(resets, adds)))
    return out


def nested_body(statement: cst.BaseStatement) -> Optional[Sequence[cst.BaseStatement]]:
    """The body of a `for` loop nested in a loop body, when it is one level of simple statements (no
    `else`, not async): the expansion follows it as part of the outer body, each of its statements
    once per iteration of both loops."""
    if not isinstance(statement, cst.For) or statement.orelse is not None or statement.asynchronous is not None:
        return None
    if not isinstance(statement.body, cst.IndentedBlock):
        return None
    body = statement.body.body
    return body if all(isinstance(x, cst.SimpleStatementLine) for x in body) else None


def reset_branches(node: cst.If) -> Optional[Tuple[list, list, Sequence[cst.BaseStatement], Set[str]]]:
    """(the resetting branch's statements, the accumulating branch's, the latter's statement list,
    the accumulators reset) for `if C: a = e ... else: a += e ...` (either branch first), else None.

    The branches are one-line statements, pairwise either a reset pair (`a = e` in one branch and
    `a += e` in the other, the same value, every pair's `=` in the same branch, each name once) or
    the same statement written alike (the one evaluation a rewrite puts before a pair,
    `kl_shared = ...`), which names no reset accumulator; `C` calls and binds nothing: it decides,
    for every accumulator alike, which iterations the sums keep. The accumulate-with-a-first-
    iteration idiom: `if u == 0: series_loss = ... else: series_loss += ...`.
    """
    if not isinstance(node.orelse, cst.Else) or not isinstance(node.body, cst.IndentedBlock):
        return None
    if not isinstance(node.orelse.body, cst.IndentedBlock) or calls_or_binds(node.test):
        return None
    left, right = list(node.body.body), list(node.orelse.body.body)
    if not left or len(left) != len(right):
        return None
    if not all(isinstance(x, cst.SimpleStatementLine) and len(x.body) == 1 for x in left + right):
        return None
    orientation = None  # True: the resets are in the `if` branch
    names: Set[str] = set()
    for one, two in zip(left, right):
        a, b = one.body[0], two.body[0]
        if isinstance(a, cst.Assign) and isinstance(b, cst.AugAssign):
            assign, augmented, here = a, b, True
        elif isinstance(a, cst.AugAssign) and isinstance(b, cst.Assign):
            assign, augmented, here = b, a, False
        else:
            if code_of(a).strip() != code_of(b).strip():
                return None
            continue  # written alike in both
        name = target_name(assign)
        if (
            (orientation is not None and orientation != here)
            or name is None
            or name in names
            or not isinstance(augmented.target, cst.Name)
            or augmented.target.value != name
            or not isinstance(augmented.operator, cst.AddAssign)
            or not same_expr(assign.value, augmented.value)
        ):
            return None
        orientation = here
        names.add(name)
    if orientation is None:
        return None
    for one, two in zip(left, right):
        if code_of(one.body[0]).strip() == code_of(two.body[0]).strip() and any(self_reads(one, n) for n in names):
            return None  # a statement written alike that names a reset accumulator
    if orientation:
        return left, right, node.orelse.body.body, names
    return right, left, node.body.body, names


def appends_in(loop: cst.For, lists: Set[str]) -> bool:
    """Whether a statement of the loop's body appends to one of `lists`."""
    return any(
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and append_target(statement.body[0]) in lists
        for statement in loop.body.body  # type: ignore[union-attr]
    )


def small_is(statement: cst.CSTNode, kind: type) -> bool:
    """A one-statement line holding a `kind` (`cst.Assign`, `cst.AugAssign`)."""
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], kind)


def calls_or_binds(node: cst.CSTNode) -> bool:
    found: List[cst.CSTNode] = []

    class Find(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            found.append(n)

    walk_tree(node, Find())
    return bool(found)


def stored_names(node: cst.CSTNode) -> Set[str]:
    names: Set[str] = set()

    def add_target(target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                add_target(element.value)
        elif isinstance(target, cst.StarredElement):
            add_target(target.value)
        elif isinstance(target, (cst.Subscript, cst.Attribute)):
            path = access_path(target)
            if path:
                names.add(path[0])

    class Collect(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            add_target(n.target)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            add_target(n.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            add_target(n.target)

        def visit_For(self, n: cst.For) -> None:
            add_target(n.target)

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            add_target(n.target)

        def visit_AsName(self, n: cst.AsName) -> None:
            add_target(n.name)

        def visit_CompFor(self, n: cst.CompFor) -> bool:
            return False

    if isinstance(node, (cst.Name, cst.Tuple, cst.List, cst.StarredElement)):
        add_target(node)
    else:
        walk_tree(node, Collect())
    return names
