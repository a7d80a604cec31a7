"""Read-only walks of libcst trees that do not rebuild the tree.

libcst's `node.visit(visitor)` rebuilds every node it enters (a new dataclass, validated) even
for a `CSTVisitor`, which changes nothing, and `node.children` does the same for one level. The
analyses walk the same module dozens of times per file (each fact its own walk), so that rebuilding
was most of gradfix's time. `walk_tree(node, visitor)` calls the visitor's `on_visit`/`on_leave` on the
same nodes in the same order as `node.visit(visitor)` (pre-order, children in source order, as
`node.children` lists them), but reads each node's children once: they are kept, per node, until
`forget()` (the engine calls it after each file). Nodes are immutable, so a node's children never
change; an entry holds its node, so its id cannot be reused while the entry lives.

`node.children` itself is libcst's `_visit_and_replace_children` run with a collecting visitor: it
too rebuilds the node. Here a node's children are read from its fields, in the order that method
visits them, learnt once per node type (`_fields`) from libcst itself; the types whose method visits a
field only sometimes (`_CONDITIONAL`) ask libcst every time. `tests/test_walk.py` checks both against
libcst's `children` and `visit` on every node of the fixtures and of gradfix's sources.

A visitor with per-attribute hooks (`visit_Call_func`, `on_visit_attribute`), or one that is not a
plain `CSTVisitor` (a transformer), is handed to libcst's own `visit`.
"""

from __future__ import annotations

from functools import lru_cache
from operator import attrgetter
from typing import Callable, Dict, Iterable, List, Optional, Tuple, TypeVar

import libcst as cst

T = TypeVar("T")

# id(node) -> (node, its children)
_CHILDREN: Dict[int, Tuple[cst.CSTNode, Tuple[cst.CSTNode, ...]]] = {}
# A bound on the entries kept between `forget()` calls (callers outside the engine never call it).
_MAX_ENTRIES = 2_000_000


# node type -> the names of its fields, in the order libcst's `_visit_and_replace_children` visits them
_FIELDS: Dict[type, Tuple[str, ...]] = {}
# Types whose `_visit_and_replace_children` visits a field only when it is set (libcst 1.x: an
# f-string's or t-string's `format_spec`): the order learnt on one node may lack a field of the next.
_CONDITIONAL = frozenset({"FormattedStringExpression", "TemplatedStringExpression"})


class _FieldOrder(cst.CSTVisitor):
    """Records the fields libcst visits on one node (it announces each one, set or not)."""

    def __init__(self) -> None:
        self.names: List[str] = []

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.names.append(attribute)

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False  # the node's own fields only


def _fields(kind: type, node: cst.CSTNode) -> Optional[Tuple[str, ...]]:
    """The visiting order of `kind`'s fields, or None where it must be asked of libcst per node."""
    names = _FIELDS.get(kind)
    if names is None:
        if kind.__name__ in _CONDITIONAL:
            return None
        order = _FieldOrder()
        node._visit_and_replace_children(order)
        names = _FIELDS[kind] = tuple(order.names)
    return names


@lru_cache(maxsize=None)
def node_types(*classes: type) -> frozenset:
    """The classes given and every subclass of them: `type(node) in node_types(A, B)` is
    `isinstance(node, (A, B))` for libcst's nodes, whose classes are all defined when libcst is
    imported (gradfix defines none). libcst's node classes are ABCs: `isinstance` on one calls
    `ABCMeta.__instancecheck__`, a Python function, for every node that is not exactly of the
    class, which made it the analyses' most frequent call."""
    found = set(classes)
    todo = list(classes)
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return frozenset(found)


_SEQUENCES = (tuple, list)
_DEFAULT = cst.MaybeSentinel.DEFAULT


# node type -> its visited fields' values as one tuple (`operator.attrgetter` of `_fields`, read in C:
# 2.5 times faster than a `getattr` per field), or None where libcst must be asked per node.
_GETTERS: Dict[type, Optional[Callable[[cst.CSTNode], tuple]]] = {}


def _getter(kind: type, node: cst.CSTNode) -> Optional[Callable[[cst.CSTNode], tuple]]:
    try:
        return _GETTERS[kind]
    except KeyError:
        pass
    names = _fields(kind, node)
    getter: Optional[Callable[[cst.CSTNode], tuple]]
    if names is None:
        getter = None
    elif len(names) == 1:
        getter = _one_field(names[0])
    else:
        getter = attrgetter(*names) if names else _no_fields
    _GETTERS[kind] = getter
    return getter


def _one_field(name: str) -> Callable[[cst.CSTNode], tuple]:
    get = attrgetter(name)  # (one name: the value itself, not a tuple)
    return lambda node: (get(node),)


def _no_fields(node: cst.CSTNode) -> tuple:
    return ()


def _read(node: cst.CSTNode) -> Tuple[cst.CSTNode, ...]:
    """`tuple(node.children)`, read from the node's fields without rebuilding it."""
    getter = _getter(type(node), node)
    if getter is None:
        return tuple(node.children)
    found: List[cst.CSTNode] = []
    for value in getter(node):
        # A visited field holds a node, a sequence of nodes (a body, parameters, `lpar`), None or
        # MaybeSentinel.DEFAULT.
        if value is None or value is _DEFAULT:
            continue
        if type(value) in _SEQUENCES:
            found.extend(value)
        else:
            found.append(value)
    return tuple(found)


def children(node: cst.CSTNode) -> Tuple[cst.CSTNode, ...]:
    """`node.children`, read once per node."""
    entry = _CHILDREN.get(id(node))
    if entry is not None and entry[0] is node:
        return entry[1]
    found = _read(node)
    if len(_CHILDREN) >= _MAX_ENTRIES:
        _CHILDREN.clear()
    _CHILDREN[id(node)] = (node, found)
    return found


def forget() -> None:
    """Drop the children read so far and the per-file results (and the trees they keep alive)."""
    _CHILDREN.clear()
    _PER_FILE.clear()
    _BY_TYPE.clear()
    _WRITTEN.clear()


# (what, id(tree)) -> (tree, its result): what `per_file` computed, until `forget()`.
_PER_FILE: Dict[Tuple[str, int], Tuple[cst.CSTNode, object]] = {}


def per_file(what: str, tree: cst.CSTNode, compute: Callable[[cst.CSTNode], T]) -> T:
    """`compute(tree)`, computed once per tree (a file's module) and kept until `forget()` (the
    engine calls it after each file): for the facts many questions about one file share, where no
    `FileFacts` is at hand. An entry holds its tree, so its id cannot be reused while it lives."""
    entry = _PER_FILE.get((what, id(tree)))
    if entry is not None and entry[0] is tree:
        return entry[1]  # type: ignore[return-value]
    value = compute(tree)
    if len(_PER_FILE) >= 32:  # (callers outside the engine never call `forget()`)
        _PER_FILE.clear()
    _PER_FILE[(what, id(tree))] = (tree, value)
    return value


def nodes_outside_lambdas(module: cst.Module) -> List[cst.CSTNode]:
    """Every node of the module in walk order (pre-order, children in source order), a lambda but
    not its body: what `exprs.nodes_within` searches, listed once per file (`per_file`) for the
    many questions asked of the whole module."""
    return per_file("module nodes", module, _module_nodes)[1]


def module_nodes(module: cst.Module) -> List[cst.CSTNode]:
    """Every node of the module in walk order, lambdas' bodies included (`preorder`), listed once
    per file (`per_file`) with `nodes_outside_lambdas`: both lists come from one walk, or from
    the order the file's codegen pass wrote its nodes in (`written_order`)."""
    return per_file("module nodes", module, _module_nodes)[0]


# id(module) -> (module, every node but the module, in the order libcst's codegen wrote them): left by
# `positions.node_maps` (`written_order`), until `forget()`.
_WRITTEN: Dict[int, Tuple[cst.CSTNode, Iterable[cst.CSTNode]]] = {}

# The node types whose codegen writes their children in another order than libcst's visit (and
# `children`) lists them: `AsName` visits its name before the whitespace around `as`, `Del` its
# target before the whitespace after `del`, `ParamSlash` its comma before the whitespace after `/`,
# `TypeVarTuple` and `ParamSpec` their name before the whitespace after `*`/`**`.
# `tests/test_walk.py` checks, on a sample holding every node type of libcst (and on the fixtures
# and gradfix's sources), that these are the only ones.
# (By name: a libcst release older than PEP 695's support has no `TypeVarTuple`, and no such node.)
_WRITTEN_OUT_OF_ORDER = tuple(
    getattr(cst, name) for name in ("AsName", "Del", "ParamSlash", "TypeVarTuple", "ParamSpec") if hasattr(cst, name)
)


def written_order(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> None:
    """Note the order a codegen pass of `module` wrote its nodes in (`nodes`: each node but the
    module once, parents before children): `module_nodes` is then read off it instead of walking
    the tree again (a fifth of the time of a big file's analysis; stop 36)."""
    if len(_WRITTEN) >= 32:  # (callers outside the engine never call `forget()`)
        _WRITTEN.clear()
    _WRITTEN[id(module)] = (module, nodes)


def _module_nodes(module: cst.CSTNode) -> Tuple[List[cst.CSTNode], List[cst.CSTNode]]:
    """`(preorder(module), preorder(module, into_lambdas=False))`: read off the order the module
    was written in where `positions.node_maps` left it (`written_order`), or from one walk."""
    written = _WRITTEN.pop(id(module), None)
    if written is not None and written[0] is module:
        return _from_written(module, written[1])
    return _walked(module)


def _from_written(module: cst.CSTNode, nodes: Iterable[cst.CSTNode]) -> Tuple[List[cst.CSTNode], List[cst.CSTNode]]:
    """`_walked(module)` from the order codegen wrote the nodes in. Codegen writes a node, then its
    children one after another, as a pre-order does: both list each subtree as one run of the same
    nodes, so a subtree written out of the visiting order (`_WRITTEN_OUT_OF_ORDER`) is put right
    by walking just it, and a lambda's body is left out by skipping its run."""
    everything = [module, *nodes]
    kinds = node_types(*_WRITTEN_OUT_OF_ORDER)
    # Innermost first (reversed): an enclosing subtree's walk rewrites an inner one's run.
    for i in reversed([i for i, node in enumerate(everything) if type(node) in kinds]):
        subtree = preorder(everything[i])
        everything[i : i + len(subtree)] = subtree
    lambdas = [i for i, node in enumerate(everything) if type(node) is cst.Lambda]
    if not lambdas:
        return everything, list(everything)
    outside: List[cst.CSTNode] = []
    start = 0
    for i in lambdas:
        if i < start:
            continue  # within a lambda already left out
        outside.extend(everything[start : i + 1])
        start = i + len(preorder(everything[i]))
    outside.extend(everything[start:])
    return everything, outside


def _walked(module: cst.CSTNode) -> Tuple[List[cst.CSTNode], List[cst.CSTNode]]:
    """`(preorder(module), preorder(module, into_lambdas=False))` from one walk. A lambda's
    descendants are the nodes pushed above the stack's height when it was popped: they are left
    out of the second list until the stack is back under that height (`barrier`; an inner lambda
    is inside the outer one's)."""
    everything: List[cst.CSTNode] = []
    outside: List[cst.CSTNode] = []
    todo: List[cst.CSTNode] = [module]
    known = _CHILDREN.get
    barrier = -1
    while todo:
        node = todo.pop()
        everything.append(node)
        if barrier < 0 or len(todo) < barrier:
            barrier = len(todo) if type(node) is cst.Lambda else -1
            outside.append(node)
        entry = known(id(node))  # (`children`, inlined: a call per node of every file's walks)
        todo.extend(reversed(entry[1] if entry is not None and entry[0] is node else children(node)))
    return everything, outside


def preorder(node: cst.CSTNode, into_lambdas: bool = True) -> List[cst.CSTNode]:
    """Every node of `node`, itself included, in walk order (pre-order, children in source order),
    by an explicit stack: a lambda's body and parameters only `into_lambdas`."""
    found: List[cst.CSTNode] = []
    todo: List[cst.CSTNode] = [node]
    known = _CHILDREN.get
    while todo:
        node = todo.pop()
        found.append(node)
        if into_lambdas or type(node) is not cst.Lambda:
            entry = known(id(node))  # (`children`, inlined: a call per node of every file's walks)
            todo.extend(reversed(entry[1] if entry is not None and entry[0] is node else children(node)))
    return found


# id(node) -> (node, the nodes within it grouped by exact type, each group in walk order): made on
# the first question about that subtree (`nodes_of_type`), until `forget()`.
_BY_TYPE: Dict[int, Tuple[cst.CSTNode, Dict[type, List[cst.CSTNode]]]] = {}
# a class (or a tuple of classes) -> `node_types` of it
_CONCRETE: Dict[object, frozenset] = {}


def nodes_of_type(node: cst.CSTNode, kind) -> List[cst.CSTNode]:
    """`[n for n in preorder(node) if isinstance(n, kind)]` (`kind` a node class or a tuple of
    them), from one walk per subtree: a special method's body is asked for its stores, calls,
    attributes and strings in turn (`facts._changes_state`), a walk each before (stop 35).
    (A module's nodes are its `module_nodes`.) Callers only read the list."""
    entry = _BY_TYPE.get(id(node))
    if entry is None or entry[0] is not node:
        grouped: Dict[type, List[cst.CSTNode]] = {}
        for found in module_nodes(node) if type(node) is cst.Module else preorder(node):
            group = grouped.get(type(found))
            if group is None:
                grouped[type(found)] = [found]
            else:
                group.append(found)
        if len(_BY_TYPE) >= _MAX_ENTRIES // 100:
            _BY_TYPE.clear()
        entry = _BY_TYPE[id(node)] = (node, grouped)
    kinds = _CONCRETE.get(kind)
    if kinds is None:
        kinds = _CONCRETE[kind] = node_types(*kind) if isinstance(kind, tuple) else node_types(kind)
    groups = [entry[1][k] for k in kinds if k in entry[1]]
    if len(groups) <= 1:
        return groups[0] if groups else []
    # Several types: in walk order, as one filter of the walk gives them.
    return [n for n in (module_nodes(node) if type(node) is cst.Module else preorder(node)) if type(n) in kinds]


# CSTVisitor and its bases: their `visit_X_attr` methods are no-ops, `on_visit_attribute` only calls them.
_BASES = frozenset(cst.CSTVisitor.__mro__)


def _plain(kind: type) -> bool:
    """Whether `node.visit` would call no visitor method but `on_visit` and `on_leave` (no attribute
    hooks, no other libcst visitor base). Visitors are often classes made per call: no cache."""
    if not issubclass(kind, cst.CSTVisitor):
        return False
    for klass in kind.__mro__:
        if klass in _BASES:
            continue
        if klass.__module__.split(".")[0] == "libcst":
            return False
        for name in klass.__dict__:
            if name in ("on_visit_attribute", "on_leave_attribute"):
                return False
            if name.startswith(("visit_", "leave_")) and name.count("_") >= 2:
                return False
    return True


def walk_tree(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """`node.visit(visitor)` for a read-only visitor, without rebuilding the tree."""
    kind = type(visitor)
    if not _plain(kind):
        node.visit(visitor)
    elif (
        kind.on_visit is cst.CSTVisitor.on_visit
        and kind.on_leave is cst.CSTVisitor.on_leave
        and not any(name.startswith(("visit_", "leave_")) for name in getattr(visitor, "__dict__", ()))
    ):
        # libcst's own `on_visit`/`on_leave`: `visit_<Type>`/`leave_<Type>` looked up once per node
        # type for this walk, not once per node (the visitor's methods do not change during a walk).
        _dispatch(node, visitor, {}, {})
    else:
        _walk(node, visitor)


def _walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    if visitor.on_visit(node):
        for child in children(node):
            _walk(child, visitor)
    visitor.on_leave(node)


def _dispatch(node: cst.CSTNode, visitor: cst.CSTVisitor, visits: dict, leaves: dict) -> None:
    """`_walk` with `CSTVisitor.on_visit` and `on_leave` inlined."""
    kind = type(node)
    try:
        visit = visits[kind]
    except KeyError:
        visit = visits[kind] = hook_of(visitor, f"visit_{kind.__name__}")
    # Children are skipped only where `visit_<Type>` returned False (`CSTVisitor.on_visit`).
    if visit is None or visit(node) is not False:
        entry = _CHILDREN.get(id(node))  # (`children`, inlined: a call per node of every walk)
        for child in entry[1] if entry is not None and entry[0] is node else children(node):
            _dispatch(child, visitor, visits, leaves)
    try:
        leave = leaves[kind]
    except KeyError:
        leave = leaves[kind] = hook_of(visitor, f"leave_{kind.__name__}")
    if leave is not None:
        leave(node)


def hook_of(visitor: cst.CSTVisitor, name: str):
    """The visitor's `visit_<Type>`/`leave_<Type>`, or None where it is libcst's own, which does
    nothing (`CSTTypedVisitorFunctions` defines one for every node type: half of a walk's calls)."""
    mine = getattr(type(visitor), name, None)
    if mine is None or mine is getattr(cst.CSTVisitor, name, None):
        return None
    return getattr(visitor, name)
