"""Shared facts about expressions: source text, equality modulo layout,
stop-gradient markers, and the alignment of two calls modulo `.detach()`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
import re
from types import MappingProxyType
from typing import AbstractSet, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Set, Tuple

import libcst as cst

from gradfix.analysis.vocabulary import FUNCTIONAL_INPLACE_POSITION, INPLACE_KEYWORDS, TRUSTED_MODULES, is_inplace_name
from gradfix.analysis.walk import hook_of, module_nodes, node_types, nodes_of_type, nodes_outside_lambdas, per_file, preorder, walk_tree

_EMPTY = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    """Source text of a node (without the leading/trailing layout of its owner)."""
    return _EMPTY.code_for_node(node)


@lru_cache(maxsize=4096)
def _normalise(code: str) -> Optional[str]:
    try:
        return ast.dump(ast.parse("(" + code + "\n)", mode="eval"))
    except SyntaxError:
        return None


def same_expr(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Structural equality, ignoring whitespace, comments and redundant parentheses."""
    key = _normalise(code_of(a).strip())
    return key is not None and key == _normalise(code_of(b).strip())


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, cst.Tuple) and not node.elements:
        return node  # `()` cannot lose its parentheses
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node


# Expressions that need their parentheses to stand as one argument of a call:
# `grad_scale((W, 2), c)` is not `grad_scale(W, 2, c)`, and a generator or a
# `yield` next to another argument is a syntax error without them.
_NEEDS_PARENS_AS_ARG = (cst.Tuple, cst.GeneratorExp, cst.Yield, cst.NamedExpr)


def as_argument(node: cst.BaseExpression) -> cst.BaseExpression:
    """`node` to be written as one argument among others: without its parentheses where that keeps its meaning."""
    if isinstance(node, _NEEDS_PARENS_AS_ARG):
        if getattr(node, "lpar", None) or (isinstance(node, cst.Tuple) and not node.elements):
            return node
        return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return strip_parens(node)


def detach_receiver(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """`X` if `node` is a stop-gradient spelling of `X`, else None.

    The spellings: `X.detach()` and `torch.detach(X)`, and with a copy on either side,
    `X.detach().clone()`, `X.clone().detach()`, `X.clone().detach_()` (the copy changes
    nothing the rewrite keeps: the callee is proven not to modify its arguments).
    `X.detach_()` alone is not one: it detaches `X` itself, in place. (`torch` is read as
    the torch module, as everywhere a call is named by its text.) A list of tensors is
    stop-gradiented item by item, `[v.detach() for v in X]` (one clause, no condition): `X`,
    iterated (`iterated_stop`), which a merge may use only where `X` is a list or a tuple.
    The legacy `X.data` (and `X.data.clone()`) is one where `X` is a tensor: any other object
    may have a `data` attribute of its own (a PackedSequence's is a tensor with gradient), so a
    merge uses it only where `X` is proven a tensor (`data_stop`, `merge.MergeSafety`).
    """
    iterated = iterated_stop(node)
    if iterated is not None:
        return iterated
    data = data_stop(node)
    if data is not None:
        return data
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return None
    if node.args:
        # `torch.detach(X)`: one positional argument, nothing else.
        func = node.func
        if (
            func.attr.value == "detach"
            and isinstance(func.value, cst.Name)
            and func.value.value == "torch"
            and len(node.args) == 1
            and node.args[0].keyword is None
            and not node.args[0].star
        ):
            return _unclone(node.args[0].value)
        return None
    method = node.func.attr.value
    inner = node.func.value
    if method == "detach":
        return _unclone(inner)
    if method == "clone" and _is_call_named(inner, "detach"):
        return _unclone(inner.func.value)  # type: ignore[attr-defined]
    if method == "clone":
        return data_stop(inner)  # `X.data.clone()`
    if method == "detach_" and _is_call_named(inner, "clone"):
        return inner.func.value  # type: ignore[attr-defined]
    return None


def data_stop(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """`X` for `X.data` (the legacy stop-gradient of a tensor; see `detach_receiver`), else None.
    `X` is no dotted path ending in `utils` (`torch.utils.data` is a module)."""
    if not (isinstance(node, cst.Attribute) and node.attr.value == "data"):
        return None
    receiver = node.value
    if isinstance(receiver, cst.Attribute) and receiver.attr.value == "utils":
        return None
    return receiver


def _is_call_named(node: cst.CSTNode, method: str) -> bool:
    return isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute) and node.func.attr.value == method


def iterated_stop(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """`X` for `[v.detach() for v in X]` (any stop-gradient spelling of the item, one `for` clause
    over a plain name, no condition), else None."""
    if not isinstance(node, cst.ListComp):
        return None
    clause = node.for_in
    if clause.inner_for_in is not None or clause.ifs or clause.asynchronous is not None or not isinstance(clause.target, cst.Name):
        return None
    item = detach_receiver(node.elt)
    if not (isinstance(item, cst.Name) and item.value == clause.target.value and not item.lpar):
        return None
    return clause.iter


def _unclone(node: cst.BaseExpression) -> cst.BaseExpression:
    """`X` for `X.clone()` (the receiver a copy was taken of), else the node itself."""
    return node.func.value if _is_call_named(node, "clone") else node  # type: ignore[attr-defined]


class _DetachFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        if detach_receiver(node) is not None:
            self.found = True
            return False
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "data":
            # `x.data()`: a method named `data`, no stop-gradient; look inside its parts only.
            walk_tree(func.value, self)
            for arg in node.args:
                walk_tree(arg, self)
            return False
        return True

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        if data_stop(node) is not None:
            self.found = True
            return False
        if data_stop(node.value) is not None:
            # `ds.data.shape`, `torch.utils.data.DataLoader`: an attribute of what `.data` gives, read
            # as a field, not an operand; look below it only.
            walk_tree(node.value.value, self)  # type: ignore[attr-defined]
            return False
        return True


def contains_detach(node: cst.CSTNode) -> bool:
    finder = _DetachFinder()
    walk_tree(node, finder)
    return finder.found


def contains_node(container: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Is `node` (by identity) inside `container` (or `container` itself)?"""
    found = [False]

    class Find(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if n is node:
                found[0] = True
            return not found[0]

    walk_tree(container, Find())
    return found[0]


def nodes_within(node: cst.CSTNode, kind: type) -> list:
    """Every node of type `kind` inside `node` (itself included), in walk order, lambdas' bodies
    excepted (they do not run there)."""
    types = node_types(*kind) if isinstance(kind, tuple) else node_types(kind)
    if type(node) is cst.Module:
        # Asked of the whole file dozens of times: its nodes are listed once, with where each type
        # stands in that list (`walk.nodes_outside_lambdas`, `_positions_by_type`).
        nodes = nodes_outside_lambdas(node)
        index = per_file("positions by type", node, _positions_by_type)
        runs = [index[t] for t in types if t in index]
        if len(runs) == 1:
            return [nodes[i] for i in runs[0]]
        return [nodes[i] for i in sorted(i for run in runs for i in run)]
    # By exact type (`walk.node_types`: `isinstance` on libcst's ABCs is a Python call per node).
    return [n for n in preorder(node, into_lambdas=False) if type(n) in types]


def _positions_by_type(module: cst.Module) -> Dict[type, List[int]]:
    """For each node type, where its nodes stand in `walk.nodes_outside_lambdas(module)`."""
    index: Dict[type, List[int]] = {}
    for i, n in enumerate(nodes_outside_lambdas(module)):
        t = type(n)
        run = index.get(t)
        if run is None:
            index[t] = [i]
        else:
            run.append(i)
    return index


def calls_within(node: cst.CSTNode) -> List[cst.Call]:
    """Every call inside `node`, lambdas' bodies excepted (`nodes_within`)."""
    return nodes_within(node, cst.Call)


def attributes_within(node: cst.CSTNode) -> List[cst.Attribute]:
    """Every attribute access inside `node` (`a.b.c` gives `a.b.c` and `a.b`), lambdas' bodies excepted."""
    return nodes_within(node, cst.Attribute)


def is_literal(node: cst.BaseExpression) -> bool:
    """Numbers, strings, None/True/False (and their negations): never tensors."""
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return is_literal(node.expression)
    return False


def access_path(node: cst.BaseExpression) -> Optional[Tuple[str, ...]]:
    """`self.z` -> ("self", "z"); `feats[i]` -> ("feats", "[]"); else None."""
    node = strip_parens(node)
    if isinstance(node, cst.Name):
        return (node.value,)
    if isinstance(node, cst.Attribute):
        base = access_path(node.value)
        return None if base is None else base + (node.attr.value,)
    if isinstance(node, cst.Subscript):
        base = access_path(node.value)
        return None if base is None else base + ("[]",)
    return None


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.paths: List[Tuple[str, ...]] = []

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        path = access_path(node)
        if path is not None:
            self.paths.append(path)
            return False
        return True

    def visit_Subscript(self, node: cst.Subscript) -> Optional[bool]:
        path = access_path(node)
        if path is not None:
            self.paths.append(path)
            # The index expressions are read too: `feats[i]` depends on `i`, and so do the
            # subscripts it is taken from (`series[u][0]` depends on `u`).
            inner: cst.BaseExpression = node
            while isinstance(inner, (cst.Subscript, cst.Attribute)):
                if isinstance(inner, cst.Subscript):
                    for element in inner.slice:
                        walk_tree(element, self)
                inner = inner.value
            return False
        return True

    def visit_Name(self, node: cst.Name) -> Optional[bool]:
        self.paths.append((node.value,))
        return False

    def visit_Arg(self, node: cst.Arg) -> Optional[bool]:
        # `d(u=x)` reads `x`, not a name `u`: a keyword names the callee's parameter (read as a name,
        # `u = d(u=x.detach(), v=y)` looked like a rebinding of what the call reads).
        walk_tree(node.value, self)
        return False

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        # `x.view(-1, 3)` reads all of `x`, not an attribute `x.view`: a store into `x[0]` changes
        # it. (Not for `self.method(...)`: that reads the method, and `self` is everything.)
        func = node.func
        if isinstance(func, cst.Attribute):
            receiver = access_path(func.value)
            if receiver is not None and receiver not in (("self",), ("cls",)):
                self.paths.append(receiver)
        return True

    def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
        return False


def read_paths(node: cst.CSTNode) -> List[Tuple[str, ...]]:
    """Every access path an expression reads (what a rebinding could change)."""
    collector = _NameCollector()
    walk_tree(node, collector)
    return collector.paths


def paths_overlap(a: Tuple[str, ...], b: Tuple[str, ...]) -> bool:
    """True when one path is a prefix of the other: storing to either changes both. An object's
    `__dict__` holds its attributes: `box.__dict__[...]` overlaps every `box.<name>`; a tensor's
    view attributes (`codebook.T`, `.mT`, `.H`, `.real`, `.data`...) share its storage, so
    `codebook.T.T[:5]` overlaps `codebook[0]` (a `self.T` that is no view overlaps too: an
    overestimate)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return True
    for k in range(n):
        if a[k] != b[k]:
            # (An attribute, past the root: a name `data` is no view of anything.)
            return k > 0 and a[:k] == b[:k] and any(part == "__dict__" or part in VIEW_ATTRIBUTES for part in (a[k], b[k]))
    return False


# Attributes of a tensor that are views of it (share its storage).
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})


# --- aligning two calls modulo `.detach()` ---------------------------------

DETACHED_IN_FIRST = "first"  # `x.detach()` in the first call, `x` in the second
DETACHED_IN_SECOND = "second"
DETACHED_IN_BOTH = "both"
LIVE_IN_BOTH = "live"


@dataclass(frozen=True)
class Point:
    """A maximal aligned piece of the two argument lists.

    `first` is the node in the first call; `operand` the expression without
    `.detach()`; `kind` says in which call(s) it is stop-gradiented.
    """

    first: cst.BaseExpression
    operand: cst.BaseExpression
    kind: str
    # Stop-gradiented item by item on one side (`[v.detach() for v in xs]`): the operand is iterated.
    iterated: bool = False
    # Stop-gradiented by the legacy `.data` on one side: one only where the operand is a tensor.
    data: bool = False


class Mismatch(Exception):
    pass


def _by_data(node: cst.BaseExpression) -> bool:
    """Whether `node` is the `.data` spelling of a stop-gradient (`X.data`, `X.data.clone()`, and
    item by item, `[p.data for p in X]`)."""
    if isinstance(node, cst.ListComp) and iterated_stop(node) is not None:
        return _by_data(node.elt)
    if data_stop(node) is not None:
        return True
    return isinstance(node, cst.Call) and _is_call_named(node, "clone") and data_stop(node.func.value) is not None  # type: ignore[attr-defined]


def _align(n1: cst.BaseExpression, n2: cst.BaseExpression, out: List[Point]) -> None:
    r1, r2 = detach_receiver(n1), detach_receiver(n2)
    iterated = iterated_stop(n1) is not None or iterated_stop(n2) is not None
    data = _by_data(n1) or _by_data(n2)
    if r1 is not None and r2 is not None:
        if not same_expr(r1, r2):
            raise Mismatch
        out.append(Point(n1, r1, DETACHED_IN_BOTH, iterated, data))
        return
    if r1 is not None:
        if contains_detach(n2) or not same_expr(r1, n2):
            raise Mismatch
        out.append(Point(n1, r1, DETACHED_IN_FIRST, iterated, data))
        return
    if r2 is not None:
        if contains_detach(n1) or not same_expr(n1, r2):
            raise Mismatch
        out.append(Point(n1, n1, DETACHED_IN_SECOND, iterated, data))
        return
    if not contains_detach(n1) and not contains_detach(n2):
        if not same_expr(n1, n2):
            raise Mismatch
        out.append(Point(n1, n1, LIVE_IN_BOTH))
        return
    # Both sides hold a stop-gradient somewhere inside: descend in step.
    if type(n1) is not type(n2):
        raise Mismatch
    if isinstance(n1, cst.Call):
        assert isinstance(n2, cst.Call)
        if contains_detach(n1.func) or not same_expr(n1.func, n2.func):
            raise Mismatch
        align_args(n1.args, n2.args, out)
    elif isinstance(n1, (cst.List, cst.Tuple, cst.Set)):
        assert isinstance(n2, type(n1))
        if len(n1.elements) != len(n2.elements):
            raise Mismatch
        for e1, e2 in zip(n1.elements, n2.elements):
            if type(e1) is not type(e2):
                raise Mismatch
            _align(e1.value, e2.value, out)
    elif isinstance(n1, cst.BinaryOperation):
        assert isinstance(n2, cst.BinaryOperation)
        if type(n1.operator) is not type(n2.operator):
            raise Mismatch
        if isinstance(n1.operator, cst.Power) and _squaring(n1.right) and _squaring(n2.right):
            align_squared(n1.left, n2.left, out)
            return
        _align(n1.left, n2.left, out)
        _align(n1.right, n2.right, out)
    elif isinstance(n1, cst.UnaryOperation):
        assert isinstance(n2, cst.UnaryOperation)
        if type(n1.operator) is not type(n2.operator):
            raise Mismatch
        _align(n1.expression, n2.expression, out)
    elif isinstance(n1, cst.Attribute):
        assert isinstance(n2, cst.Attribute)
        if n1.attr.value != n2.attr.value:
            raise Mismatch
        _align(n1.value, n2.value, out)
    elif isinstance(n1, cst.Subscript):
        assert isinstance(n2, cst.Subscript)
        if len(n1.slice) != len(n2.slice) or any(
            contains_detach(s) or not _same_slice(s, t) for s, t in zip(n1.slice, n2.slice)
        ):
            raise Mismatch
        _align(n1.value, n2.value, out)
    else:
        raise Mismatch


def _squaring(exponent: cst.BaseExpression) -> bool:
    """The literal exponent 2 (`x ** 2`, `x.pow(2)`)."""
    exponent = strip_parens(exponent)
    return isinstance(exponent, (cst.Integer, cst.Float)) and exponent.evaluated_value == 2


def align_squared(n1: cst.BaseExpression, n2: cst.BaseExpression, out: List[Point]) -> None:
    """`_align` of two expressions that are squared: also a difference against the same difference
    written the other way round (`(z_q.detach() - z) ** 2` against `(z.detach() - z_q) ** 2`, a
    held-out VQ-GAN codebook's two terms). The square of `b - a` is the square of `a - b` bit for
    bit, and so is its gradient: IEEE rounding is symmetric, so `fl(b - a) == -fl(a - b)`, and
    `pow`'s backward (`grad * 2 * self`) and `-`'s (`-grad` for the right operand) change only
    signs. The points stay in the first expression's order, which the rewrite evaluates."""
    mark = len(out)
    try:
        _align(n1, n2, out)
        return
    except Mismatch:
        del out[mark:]
    d1, d2 = strip_parens(n1), strip_parens(n2)
    if not (
        isinstance(d1, cst.BinaryOperation) and isinstance(d2, cst.BinaryOperation)
        and isinstance(d1.operator, cst.Subtract) and isinstance(d2.operator, cst.Subtract)
    ):
        raise Mismatch
    _align(d1.left, d2.right, out)
    _align(d1.right, d2.left, out)


def _same_slice(a: cst.SubscriptElement, b: cst.SubscriptElement) -> bool:
    return _normalise("x[" + code_of(a) + "]") == _normalise("x[" + code_of(b) + "]")


def align_args(
    args1: Tuple[cst.Arg, ...], args2: Tuple[cst.Arg, ...], out: List[Point]
) -> None:
    if len(args1) != len(args2):
        raise Mismatch
    for a1, a2 in zip(args1, args2):
        k1 = a1.keyword.value if a1.keyword else None
        k2 = a2.keyword.value if a2.keyword else None
        if k1 != k2 or a1.star != a2.star:
            raise Mismatch
        _align(a1.value, a2.value, out)


def align_calls(
    c1: cst.Call, c2_args: Tuple[cst.Arg, ...]
) -> Optional[List[Point]]:
    """Align the arguments of two calls of the same callee modulo `.detach()`.

    Returns the aligned points in source order of the first call, or None when
    the calls differ in anything but stop-gradient markers.
    """
    out: List[Point] = []
    try:
        align_args(c1.args, c2_args, out)
    except Mismatch:
        return None
    return out


def align_receivers(c1: cst.Call, c2: cst.Call) -> Optional[List[Point]]:
    """Align two method calls `(e1).m(args)` and `(e2).m(args)` on their receivers modulo `.detach()`
    (`(z_q - z.detach()).pow(2)` against `(z_q.detach() - z).pow(2)`), then on their arguments;
    None when they differ in anything else."""
    if not (isinstance(c1.func, cst.Attribute) and isinstance(c2.func, cst.Attribute)):
        return None
    if c1.func.attr.value != c2.func.attr.value:
        return None
    out: List[Point] = []
    squared = c1.func.attr.value == "pow" and len(c1.args) == 1 and c1.args[0].keyword is None and not c1.args[0].star and _squaring(c1.args[0].value)
    try:
        (align_squared if squared else _align)(c1.func.value, c2.func.value, out)
        align_args(c1.args, c2.args, out)
    except Mismatch:
        return None
    return out


def core_call(call: cst.Call) -> Tuple[cst.Call, List[cst.Call]]:
    """`f(x.detach(), y).mean()` -> (`f(x.detach(), y)`, [the `.mean()` call]).

    Method calls chained on the call that holds the stop-gradients are part
    of the evaluated function (`D(x).mean()` evaluates `D` then `mean`).
    """
    chain: List[cst.Call] = []
    while (
        isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Call)
        and contains_detach(call.func.value)
        and not any(contains_detach(a) for a in call.args)
    ):
        chain.append(call)
        call = call.func.value
    return call, chain


def same_chain(chain1: List[cst.Call], chain2: List[cst.Call]) -> bool:
    """Two method chains with the same methods and the same (detach-free) arguments."""
    if len(chain1) != len(chain2):
        return False
    for c1, c2 in zip(chain1, chain2):
        assert isinstance(c1.func, cst.Attribute) and isinstance(c2.func, cst.Attribute)
        if c1.func.attr.value != c2.func.attr.value or len(c1.args) != len(c2.args):
            return False
        for a1, a2 in zip(c1.args, c2.args):
            k1 = a1.keyword.value if a1.keyword else None
            k2 = a2.keyword.value if a2.keyword else None
            if k1 != k2 or a1.star != a2.star or not same_expr(a1.value, a2.value):
                return False
    return True


def swap_first_two(args: Tuple[cst.Arg, ...]) -> Optional[Tuple[cst.Arg, ...]]:
    """The arguments with the first two positional ones exchanged, for symmetric callees."""
    positional = [a for a in args if a.keyword is None and not a.star]
    if len(positional) != 2 or any(a.keyword is None and not a.star for a in args[2:]):
        return None
    first, second = args[0], args[1]
    return (first.with_changes(value=second.value), second.with_changes(value=first.value)) + tuple(args[2:])


def last_name(node: cst.CSTNode) -> str:
    """The last name of a callee or reference: `f` for `f`, `step` for `t.step`; "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return ""


def string_value(node: cst.CSTNode) -> Optional[str]:
    """The text a string literal stands for (None for anything else: a bytes literal, an f-string,
    one libcst cannot read)."""
    if not isinstance(node, cst.SimpleString):
        return None
    try:
        text = node.evaluated_value
    except Exception:  # noqa: BLE001 - an unusual literal: no text
        return None
    return text if isinstance(text, str) else None


def literal_key(subscript: cst.Subscript) -> Optional[str]:
    """`d["log"]`'s key (`string_value`), or None when it is not one string literal."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    return string_value(subscript.slice[0].slice.value)


def flag_argument(call: cst.Call, position: Optional[int]) -> Optional[cst.Arg]:
    """The positional argument at `position` unless it is the literal `False` or `None`, or a `*args` or
    `**kwargs` that may hold it; None for neither (or no `position`): how `inplace` is passed by
    position (`F.relu(h, True)`, `nn.Dropout(0.5, True)`)."""
    if position is None:
        return None
    positional = [arg for arg in call.args if arg.keyword is None]
    for index, arg in enumerate(positional):
        if arg.star == "*" or (index == position and not (isinstance(arg.value, cst.Name) and arg.value.value in ("False", "None"))):
            return arg
    return next((arg for arg in call.args if arg.star == "**"), None)


def is_call_named(node: cst.CSTNode, attr: str) -> bool:
    """`<anything>.attr(...)`. (Not with libcst.matchers: importing it takes a third of a second,
    paid again by every worker process.)"""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == attr


def ends_in_value(
    node: cst.CSTNode,
    parent_of: Callable[[cst.CSTNode], Optional[cst.CSTNode]],
    functions: AbstractSet[str],
    methods: AbstractSet[str],
    detaching: Optional[Callable[[cst.Call], bool]] = None,
) -> bool:
    """The read `node` ends in a value without gradient: `x.item()`, `(a - x).item()`, `float(x)`, an f-string.

    Walks up from `node` to its statement (`parent_of`: a node's parent, None
    at the top): an f-string, an argument of one of `functions` (`float`,
    `print`) or the receiver of one of `methods` called (`.item()`,
    `.detach()`) ends the read in a value, and so does an argument of a call
    `detaching` says detaches what it is given (Lightning's `self.log`); an
    argument of any other call may keep the tensor, and so does a `:=` it passes through
    (`(t := x).item()` binds `t` to the tensor). Shared by the rules that
    must tell a name read as a value (logging) from one read as a tensor (its
    gradient matters).
    """
    child = node
    parent = parent_of(child)
    while parent is not None and not isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        if isinstance(parent, cst.FormattedStringExpression):
            return True
        if isinstance(parent, cst.NamedExpr) and parent.value is child:
            return False  # `(t := x).item()`: `t` keeps the tensor, read elsewhere
        if isinstance(parent, cst.Call):
            func = parent.func
            if child is func:
                pass  # the receiver side of a method call: look further up
            elif isinstance(func, cst.Name) and func.value in functions:
                return True
            elif detaching is not None and detaching(parent):
                return True
            else:
                return False  # an argument of some other call: it may keep the tensor
        if isinstance(parent, cst.Attribute) and parent.attr.value in methods:
            grand = parent_of(parent)
            if isinstance(grand, cst.Call) and grand.func is parent:
                return True
        child = parent
        parent = parent_of(child)
    return False


def is_inplace_call(call: cst.Call) -> bool:
    """A call that may write into a tensor argument or receiver: `x.add_(1)`, `F.relu(x, inplace=True)`,
    `torch.clamp(x, 0, 1, out=x)`. (`inplace=False` spelled out is not.)"""
    if is_inplace_name(last_name(call.func)):
        return True  # PyTorch's convention for in-place operations: `add_`, `zero_`
    if _inplace_position(call) is not None:
        return True
    for arg in call.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "out":
            return True
        if arg.keyword.value == "max_norm" and not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            return True  # `F.embedding(i, w, max_norm=1.0)` renormalises rows of `w` in place
        if arg.keyword.value == "inplace":
            value = arg.value
            return not (isinstance(value, cst.Name) and value.value == "False")
    return False


def may_write(call: cst.Call) -> bool:
    """`is_inplace_call`, or a call given a `**` mapping, which may hold `out=` or `inplace=True`
    (`torch.mul(t, 0.5, **{"out": t})`; review, round 5): what a pure function must not be called
    with where it is proven to change nothing."""
    return is_inplace_call(call) or any(arg.star == "**" for arg in call.args)


def _inplace_position(call: cst.Call) -> Optional[cst.Arg]:
    """The argument that makes a functional activation or dropout in place by position
    (`F.relu(h, True)`: `FUNCTIONAL_INPLACE_POSITION`, by the callee's name), or a `*args` that
    may; None for neither."""
    return flag_argument(call, FUNCTIONAL_INPLACE_POSITION.get(last_name(call.func)))


def inplace_keyword(call: cst.Call) -> str:
    """What makes a call in place, as written: `inplace=True`, `out=y`, `True` (`inplace` by
    position), `*args` ("" if none)."""
    positional = _inplace_position(call)
    if positional is not None:
        return code_of(positional).strip().rstrip(",")
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in INPLACE_KEYWORDS:
            return f"{arg.keyword.value}={code_of(arg.value).strip()}"
    return ""


def name_references(scope: cst.CSTNode, matches: Callable[[str], bool], strings: bool = False) -> List[cst.CSTNode]:
    """The names and attribute names in `scope` that `matches` (with `strings`, string literals too,
    by the text they stand for), in source order, an attribute before what it is taken from. Import statements
    are skipped: the use of an imported name is found where it is used. (Hook registrations:
    `facts.FileFacts.gradient_hooks`, `facts.FileFacts.forward_hooks`.)"""
    found: List[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            if matches(node.attr.value):
                found.append(node)
            walk_tree(node.value, self)
            return False  # `attr` is no free name

        def visit_Name(self, node: cst.Name) -> None:
            if matches(node.value):
                found.append(node)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if not strings:
                return
            text = string_value(node)
            if matches(node.value if text is None else text):  # an unusual literal: as written
                found.append(node)  # `getattr(D, "register_forward_hook")`

    walk_tree(scope, Collect())
    return found


# --- every form that binds a name ---------------------------------------------


def bound_names(target: cst.CSTNode) -> List[str]:
    """The names a binding target binds: `a`, `a, *b`, `[a, (b, c)]`; none for `x.y`/`x[i]`."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in bound_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return bound_names(target.value)
    return []


class _Bindings(cst.CSTVisitor):
    """Counts every binding of every name in a tree, in any scope and by any form.

    Allowlist thinking: a name counts as bound once only if no form below binds
    it again. The forms are Python's: assignment targets (tuple and star
    targets included), augmented and annotated assignment, `for` and
    comprehension targets, `:=`, `with ... as`, `except ... as`, imports,
    `def`/`class`, parameters (function and lambda), `match` captures,
    `del`, and `global`/`nonlocal` (a function that declares the name binds
    the module's name wherever it assigns it, which the counts above see; the
    declaration itself counts as a binding so a single module assignment plus
    a `global` declaration is never 'bound once').
    """

    def __init__(self) -> None:
        self.counts: Dict[str, int] = {}

    def _bind(self, names: Iterable[str], weight: int = 1) -> None:
        for name in names:
            self.counts[name] = self.counts.get(name, 0) + weight

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind(bound_names(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(bound_names(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(bound_names(node.target), 2)

    def visit_For(self, node: cst.For) -> None:
        self._bind(bound_names(node.target), 2)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(bound_names(node.target), 2)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(bound_names(node.target))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(bound_names(node.asname.name))

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind(bound_names(node.name.name))

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> None:
        if node.name is not None:
            self._bind(bound_names(node.name.name))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is not None:
            self._bind(bound_names(node.asname.name))
        else:
            self._bind([code_of(node.name).strip().split(".")[0]])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind([node.name.value])

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind([node.name.value])

    def visit_Param(self, node: cst.Param) -> None:
        self._bind([node.name.value], 2)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._bind([node.name.value])

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self._bind([node.name.value])

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self._bind([node.rest.value])

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(bound_names(node.target), 2)

    def visit_Global(self, node: cst.Global) -> None:
        self._bind((item.name.value for item in node.names), 2)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._bind((item.name.value for item in node.names), 2)

    # Python 3.12's `type X = ...` and type parameters (`def f[T]()`).
    def visit_TypeAlias(self, node: cst.TypeAlias) -> None:
        self._bind([node.name.value])

    def visit_TypeVar(self, node: cst.TypeVar) -> None:
        self._bind([node.name.value])

    def visit_TypeVarTuple(self, node: cst.TypeVarTuple) -> None:
        self._bind([node.name.value])

    def visit_ParamSpec(self, node: cst.ParamSpec) -> None:
        self._bind([node.name.value])


def may_change_builtins(tree: cst.CSTNode) -> bool:
    """`_may_change_builtins(tree)`, computed once per module (`walk.per_file`): many analyses ask it of the file."""
    if isinstance(tree, cst.Module):
        return per_file("may change builtins", tree, _may_change_builtins)
    return _may_change_builtins(tree)


def _may_change_builtins(tree: cst.CSTNode) -> bool:
    """Whether `tree` may rebind a builtin without binding its name in the file: a star import
    (`from numpy import *` binds `sum`, `min`, `abs`), any use of `__builtins__`, or the `builtins`
    module (`import builtins as b`) used other than by reading one of its attributes (`builtins.sum
    = f`, `setattr(builtins, ...)`, `del builtins.len`, `vars(builtins)`, `m = builtins`), or named by a
    string (`sys.modules["builtins"]`). Allowlist:
    only `builtins.name` loads are proven harmless. Any scope, lambdas included.

    Also the forms that bind a global of the file without a binding statement, which would shadow
    the builtin as well (`dynamic_global`): `globals()['sum'] = f`, `exec('sum = f')`,
    `setattr(sys.modules[__name__], 'sum', f)`, `from builtins import __dict__`."""
    if dynamic_global(tree) is not None:
        return True
    aliases: Set[str] = set()
    names: List[cst.Name] = []
    harmless: Set[int] = set()  # the `builtins` of `builtins.name` loads, and of the imports
    targets: Set[int] = set()  # attributes written or deleted
    star = False

    class Collect(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            nonlocal star
            star = star or isinstance(node.names, cst.ImportStar)
            harmless.update(id(n) for n in all_nodes(node))

        def visit_Import(self, node: cst.Import) -> None:
            harmless.update(id(n) for n in all_nodes(node))
            for alias in node.names:
                if code_of(alias.name).strip() == "builtins":
                    asname = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(asname, cst.Name):
                        aliases.add(asname.value)

        def _targets(self, target: cst.CSTNode) -> None:
            targets.update(id(n) for n in all_nodes(target) if isinstance(n, cst.Attribute))

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._targets(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._targets(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._targets(node.target)

        def visit_Del(self, node: cst.Del) -> None:
            self._targets(node.target)

        def visit_Name(self, node: cst.Name) -> None:
            names.append(node)

    walk_tree(tree, Collect())
    if star or any(n.value == "__builtins__" for n in names):
        return True
    # The module reached by its name as a string: `sys.modules["builtins"]`, `import_module("builtins")`.
    if any(isinstance(n, cst.SimpleString) and string_value(n) in ("builtins", "__builtins__") for n in all_nodes(tree)):
        return True
    if not aliases:
        return False
    for node in all_nodes(tree):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and id(node) not in targets:
            harmless.add(id(node.value))
    return any(n.value in aliases and id(n) not in harmless for n in names)


# Builtins that reach a namespace as a dict or run code that binds names in it: `globals()['sum'] = f`,
# `locals()` and `vars()` at module level, `exec('sum = f')`, `eval('(sum := f)')`, `__import__(__name__)`.
_NAMESPACE_BUILTINS = frozenset({"globals", "locals", "exec", "eval", "__import__"})
# Builtins that write or expose an object's attributes: harmless on an object, not on a module
# (`setattr(sys.modules[__name__], 'sum', f)`, `vars(mod)['sum'] = f`).
_ATTRIBUTE_BUILTINS = frozenset({"setattr", "delattr", "vars"})
# Attributes that expose a namespace as a dict: a frame's (`currentframe().f_globals`), a function's
# (`f.__globals__`), a module's (`mod.__dict__`).
# And a module reached by its name or by an object of it (`importlib.import_module(__name__)`,
# `inspect.getmodule(f)`), and the `builtins` module as a builtin function's `__self__` (`print.__self__`).
# Imported by these names (`from importlib import import_module`), read as names too.
_NAMESPACE_ATTRIBUTES = frozenset({"f_globals", "f_locals", "f_builtins", "__globals__", "__builtins__", "import_module", "getmodule", "__self__"})
_BUILTIN_NAMES = frozenset(dir(__import__("builtins")))
# The node classes `_dynamic_global` tests, with their subclasses (`walk.node_types`).
_IMPORT, _IMPORT_FROM, _ATTRIBUTE, _ARG = node_types(cst.Import), node_types(cst.ImportFrom), node_types(cst.Attribute), node_types(cst.Arg)
_SIMPLE_STRING, _DEL, _NAME, _CALL = node_types(cst.SimpleString), node_types(cst.Del), node_types(cst.Name), node_types(cst.Call)
_STORES = node_types(cst.AssignTarget, cst.AugAssign, cst.AnnAssign)


def dynamic_global(tree: cst.CSTNode) -> Optional[cst.CSTNode]:
    """`_dynamic_global(tree)`, computed once per module (`walk.per_file`): the rules and analyses
    ask it of the file many times, and it walks the whole tree."""
    if isinstance(tree, cst.Module):
        return per_file("dynamic global", tree, _dynamic_global)
    return _dynamic_global(tree)


def _dynamic_global(tree: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The first node of `tree` that may bind a module global (or a builtin) by a form that is no
    binding statement, or None.
    Allowlist by shape, conservative: any use of a name in `_NAMESPACE_BUILTINS` (a call or an alias);
    `setattr`/`delattr`/`vars` unless the object is `self`, or a name the file does not import, or an attribute,
    item or call of one (`self.model`); `sys.modules` (`sys` by any alias, `from sys import modules`),
    `import_module`, `getmodule`; a namespace attribute (`_NAMESPACE_ATTRIBUTES`, by attribute, by name or as a
    string, `getattr(sys, "modules")`), `__dict__` of
    anything but `self` or `cls`; an import of `__main__`, or from `builtins` of a name with a leading
    underscore (`from builtins import __dict__`).
    And a store or `del` of an attribute named as a builtin or as a global of the file (`train.sum = f`,
    `me.k = 0.5`, `print.__self__.len = f`) on anything but such a name of the file: a module may import
    itself under its own name (`import train`, `from pkg import train as me`), and gradfix does not know
    that name, so any imported name may be this file's module (`print.__self__`, `builtins`, is a namespace
    attribute). Another name (`cfg.sum = 0`, `trainer.model = model`) is taken for no module.
    So a name imported from outside `TRUSTED_MODULES` (maybe this file's module) may only have its
    attributes read or called, be called, or be given to a builtin that reads it (`isinstance`): handed
    on in any other way (`m = train`, `[train]`, `partial(setattr, train)`) it may be written under
    another name (review, round 6). And `setattr`, `delattr`, `vars` used other than by a call of the
    name (`map(setattr, ...)`), and `__setattr__`/`__delattr__` of or on anything but such a
    harmless object (`train.__setattr__('sum', f)`, `type(m).__setattr__(m, ...)`)."""
    nodes = all_nodes(tree)
    imported: Set[str] = set()
    sys_names: Set[str] = set()  # the names `import sys` binds (`import sys as s`)
    not_names: Set[int] = set()  # `Name` nodes that read no variable: attribute names, keywords
    stored: List[cst.CSTNode] = []  # targets of stores and `del`s
    foreign: Set[str] = set()  # imported from outside `TRUSTED_MODULES`: maybe this file's module
    for node in nodes:
        kind = type(node)  # (a type test per form: `isinstance` on libcst's ABCs was most of the time)
        if kind in _IMPORT:
            for alias in node.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                imported.add(code_of(bound).strip().split(".")[0])
                if code_of(alias.name).strip().split(".")[0] not in TRUSTED_MODULES:
                    foreign.add(code_of(bound).strip().split(".")[0])
                if code_of(alias.name).strip() == "__main__":
                    return node
                if code_of(alias.name).strip() == "sys":
                    sys_names.add(code_of(bound).strip())
        elif kind in _IMPORT_FROM and not isinstance(node.names, cst.ImportStar):
            module = code_of(node.module).strip() if node.module is not None else ""
            for alias in node.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                imported.add(code_of(bound).strip())
                if node.relative or module.split(".")[0] not in TRUSTED_MODULES:
                    foreign.add(code_of(bound).strip())
                name = code_of(alias.name).strip()
                if module in ("builtins", "__main__") and name.startswith("_"):
                    return node
                if name in _NAMESPACE_ATTRIBUTES or (module == "sys" and name == "modules"):
                    return node  # `from importlib import import_module`, `from sys import modules`
            not_names.update(id(n) for n in all_nodes(node))
        elif kind in _ATTRIBUTE:
            not_names.add(id(node.attr))
            attr = node.attr.value
            if attr in _NAMESPACE_ATTRIBUTES:
                return node
            if attr == "__dict__" and not (isinstance(node.value, cst.Name) and node.value.value in ("self", "cls")):
                return node
            if attr == "modules" and isinstance(node.value, cst.Name) and node.value.value in sys_names | {"sys"}:
                return node
        elif kind in _ARG and node.keyword is not None:
            not_names.add(id(node.keyword))
        elif kind in _SIMPLE_STRING and string_value(node) in _NAMESPACE_ATTRIBUTES | {"modules", "__dict__"}:
            return node  # the attribute by its name: `getattr(sys, "modules")`, `getattr(m, "__dict__")`
        elif kind in _STORES:
            stored.append(node.target)
        elif kind in _DEL:
            stored.append(node.target)
    globals_ = module_bindings(tree)

    def harmless(root: Optional[cst.CSTNode]) -> bool:
        """`root` (a store's object, stripped to its name) is `self` or a name the file does not import.
        (A builtin function's `__self__`, the `builtins` module, is found as a namespace attribute.)"""
        while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
            root = root.func if isinstance(root, cst.Call) else root.value
        return isinstance(root, cst.Name) and (root.value == "self" or root.value not in imported)

    for target in stored:
        for node in all_nodes(target):
            if (
                isinstance(node, cst.Attribute)
                and (node.attr.value in _BUILTIN_NAMES or node.attr.value in globals_)
                and not harmless(node.value)
            ):
                return node
    for node in nodes:
        kind = type(node)
        if kind in _NAME and id(node) not in not_names and node.value in _NAMESPACE_BUILTINS | _NAMESPACE_ATTRIBUTES:
            return node
        if kind not in _CALL:
            continue
        if isinstance(node.func, cst.Name) and node.func.value in _ATTRIBUTE_BUILTINS:
            root = node.args[0].value if node.args and not node.args[0].star else None
            if not harmless(root):
                return node
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _SETATTR_METHODS:
            # `m.__setattr__('sum', f)`, `type(m).__setattr__(m, 'sum', f)`: the receiver or the first argument.
            first = node.args[0].value if node.args and not node.args[0].star else None
            if not harmless(node.func.value) or (first is not None and not harmless(first)):
                return node
    return _handed_on_module(tree, foreign, not_names)


# Dunder methods that set or delete an attribute of their object (or of their first argument, on a class).
_SETATTR_METHODS = frozenset({"__setattr__", "__delattr__"})
# Builtins that only read what they are given: a module handed to them stays as it is.
_MODULE_READERS = frozenset({"isinstance", "issubclass", "print", "len", "id", "repr", "str", "hasattr", "getattr", "type", "callable"})


def _handed_on_module(tree: cst.CSTNode, foreign: AbstractSet[str], not_names: AbstractSet[int]) -> Optional[cst.CSTNode]:
    """For `dynamic_global`: the first read of a name in `foreign` (maybe this file's module) that
    hands the object on (bound to another name, put in a display, given to a call other than a reading
    builtin, a `for` loop's iterable), or of `setattr`/`delattr`/`vars` other than as the called name
    (`partial(setattr, me)`, `map(setattr, ...)`); None if there is none."""
    found: List[cst.CSTNode] = []

    class Walk(cst.CSTVisitor):
        def __init__(self) -> None:
            self.parents: List[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if found or isinstance(node, (cst.Import, cst.ImportFrom)):
                return False
            if isinstance(node, cst.Name) and id(node) not in not_names and self.parents:
                parent = self.parents[-1]
                called = isinstance(parent, cst.Call) and parent.func is node
                if node.value in _ATTRIBUTE_BUILTINS and not called:
                    found.append(node)
                elif node.value in foreign and not called and not _reads_module(node, parent, self.parents):
                    found.append(node)
            self.parents.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if self.parents and self.parents[-1] is original_node:
                self.parents.pop()

    tree.visit(Walk())
    return found[0] if found else None


def _reads_module(node: cst.Name, parent: cst.CSTNode, parents: List[cst.CSTNode]) -> bool:
    """`m.attr` (read, called or stored: stores are checked by name in `dynamic_global`), `m` given
    to a builtin that reads it, compared, a `def`/`class`/parameter name, a `global` declaration."""
    if isinstance(parent, cst.Attribute):
        return parent.value is node or parent.attr is node
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.Param, cst.FunctionDef, cst.ClassDef, cst.Global, cst.Nonlocal, cst.NameItem)):
        return True
    if isinstance(parent, cst.Arg) and parent.value is node and not parent.star and len(parents) > 1:
        call = parents[-2]
        return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _MODULE_READERS
    return False


def module_bindings(tree: cst.CSTNode) -> FrozenSet[str]:
    """The names `tree` (a module) binds in its own namespace: by statements outside functions,
    classes and lambdas (defs and classes by their names), and names declared `global` anywhere."""
    found: Set[str] = set()

    class Collect(_Bindings):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            found.add(node.name.value)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            found.add(node.name.value)
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    collector = Collect()
    walk_tree(tree, collector)
    found.update(item.name.value for n in nodes_of_type(tree, cst.Global) for item in n.names)
    return frozenset(found | set(collector.counts))


def all_nodes(tree: cst.CSTNode) -> List[cst.CSTNode]:
    """Every node of `tree`, itself included, in walk order, lambdas' bodies and nested functions
    included. A module's list is made once per file (`walk.per_file`): callers only read it."""
    if isinstance(tree, cst.Module):
        return module_nodes(tree)
    return preorder(tree)


def unscoped_bindings(tree: cst.CSTNode) -> FrozenSet[str]:
    """The names bound in `tree` by forms libcst's scope analysis does not record, so that a
    binding list from `ScopeProvider` misses them: `:=` (inside a comprehension it binds the
    enclosing function's name) and `match` captures (`case series:`, `case [x, *rest]:`,
    `case {**rest}:`, `case P(a) as b:`). Any scope: an overestimate, never an omission."""
    found: Set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            found.update(bound_names(node.target))

        def visit_MatchAs(self, node: cst.MatchAs) -> None:
            if node.name is not None:
                found.add(node.name.value)

        def visit_MatchStar(self, node: cst.MatchStar) -> None:
            if node.name is not None:
                found.add(node.name.value)

        def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
            if node.rest is not None:
                found.add(node.rest.value)

    walk_tree(tree, Collect())
    return frozenset(found)


def scope_bindings(tree: cst.CSTNode) -> FrozenSet[str]:
    """The names bound in `tree`'s own scope by any form (`binding_counts`: `def`, `x = ...` under an
    `if`, `for x in`, `:=`), and in the scopes of the classes in it (an overestimate): the bodies
    and parameters of functions and lambdas left out (their own scopes). For a module: its
    module-level names, which are attributes of the module object; for a class body: its
    attributes."""
    collector = _OwnScopeBindings()
    walk_tree(tree, collector)
    return frozenset(collector.counts)


def own_scope_binding_counts(tree: cst.CSTNode) -> Mapping[str, int]:
    """`scope_bindings` with how many times each name is bound there (a few forms count double)."""
    collector = _OwnScopeBindings()
    walk_tree(tree, collector)
    return collector.counts


class _OwnScopeBindings(_Bindings):
    """`_Bindings` over what `_DropFunctionBodies` leaves of a tree (a def's name, decorators, return
    annotation and type parameters; of a lambda nothing), without rebuilding the tree as a
    transformer does: that rebuild was half of a large file's facts (stop 32)."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        super().visit_FunctionDef(node)
        for part in (*node.decorators, node.returns, getattr(node, "type_parameters", None)):
            if part is not None:
                walk_tree(part, self)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


class _DropFunctionBodies(cst.CSTTransformer):
    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.CSTNode:
        return updated_node.with_changes(body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])]), params=cst.Parameters())

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.CSTNode:
        return updated_node.with_changes(body=cst.Name("None"), params=cst.Parameters())


def imported_names(statement: cst.CSTNode) -> List[str]:
    """The names a top-level `import` statement binds."""
    names: List[str] = []
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        names.append(alias.asname.name.value)
                    else:
                        head = alias.name
                        while isinstance(head, cst.Attribute):
                            head = head.value
                        if isinstance(head, cst.Name):
                            names.append(head.value)
    return names


def binding_counts(tree: cst.CSTNode) -> Mapping[str, int]:
    """How many times each name is bound anywhere in `tree` (see `_Bindings`; a few forms count
    double). A module's counts are made once per file (`walk.per_file`) and read-only: a dozen
    analyses ask for them, and each used to walk the whole file again."""
    if type(tree) is cst.Module:
        return per_file("binding counts", tree, _module_binding_counts)
    return _count_bindings(preorder(tree))


def _module_binding_counts(module: cst.Module) -> Mapping[str, int]:
    return MappingProxyType(_count_bindings(all_nodes(module)))


def _count_bindings(nodes: List[cst.CSTNode]) -> Dict[str, int]:
    # `_Bindings`' hooks, called on every node of the list (every node of the tree: the counts do
    # not depend on the order, and no hook skips a subtree), looked up once per node type.
    collector = _Bindings()
    hooks: Dict[type, Optional[Callable[[cst.CSTNode], None]]] = {}
    for node in nodes:
        kind = type(node)
        try:
            hook = hooks[kind]
        except KeyError:
            hook = hooks[kind] = hook_of(collector, f"visit_{kind.__name__}")
        if hook is not None:
            hook(node)
    return collector.counts


def single_return(function: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    """The expression a function returns when its body is one `return` (after an optional docstring), else None."""
    found = let_return(function)
    return found[1] if found is not None and not found[0] else None


def let_return(function: cst.FunctionDef) -> Optional[Tuple[List[Tuple[cst.Name, cst.BaseExpression]], cst.BaseExpression]]:
    """`([(name, value), ...], returned)` when a function's body (after an optional docstring) is
    plain `name = value` assignments, each to a name of its own, followed by one `return`; else
    None. (`single_return`'s shape is the one with no assignment.)"""
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    statements = list(body.body)
    if statements and is_docstring(statements[0]):
        statements = statements[1:]
    if not statements or not all(isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 for s in statements):
        return None
    *lets, last = [s.body[0] for s in statements]  # type: ignore[attr-defined]
    if not isinstance(last, cst.Return) or last.value is None:
        return None
    found: List[Tuple[cst.Name, cst.BaseExpression]] = []
    for small in lets:
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
            return None
        found.append((small.targets[0].target, small.value))  # type: ignore[arg-type]
    names = [target.value for target, _ in found]
    if len(set(names)) != len(names):
        return None
    return found, last.value


def is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def format_field_attributes(text: str) -> Optional[FrozenSet[str]]:
    """The attribute names the replacement fields of a `str.format` template read (`"{0.gnorm:.4f}"`,
    `"{m.a.b}"`, nested fields in a spec: `"{0:{1.width}}"`): `format` reads them by `getattr` on
    its arguments (review, round 10). None where the text is no template `str.format` accepts."""
    import string

    found = set()
    try:
        for _, field, spec, _ in string.Formatter().parse(text):
            if field:
                found.update(re.findall(r"\.([^.\[]*)", field))
            if spec and "{" in spec:
                inner = format_field_attributes(spec)
                if inner is None:
                    return None
                found |= inner
    except ValueError:
        return None
    return frozenset(found)
