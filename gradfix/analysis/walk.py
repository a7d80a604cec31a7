"""Read-only walks of libcst trees that do not rebuild the tree.

libcst's `node.visit(visitor)` rebuilds every node it enters (a new dataclass, validated) even
for a `CSTVisitor`, which changes nothing, and `node.children` does the same for one level. The
analyses walk the same module dozens of times per file (each fact its own walk), so that rebuilding
was most of gradfix's time. `walk_tree(node, visitor)` calls the visitor's `on_visit`/`on_leave` on the
same nodes in the same order as `node.visit(visitor)` (pre-order, children in source order, as
`node.children` lists them), but reads each node's children once: they are kept, per node, until
`forget()` (the engine calls it after each file). Nodes are immutable, so a node's children never
change; an entry holds its node, so its id cannot be reused while the entry lives.

A visitor with per-attribute hooks (`visit_Call_func`, `on_visit_attribute`), or one that is not a
plain `CSTVisitor` (a transformer), is handed to libcst's own `visit`.
"""

from __future__ import annotations

from typing import Dict, Tuple

import libcst as cst

# id(node) -> (node, its children)
_CHILDREN: Dict[int, Tuple[cst.CSTNode, Tuple[cst.CSTNode, ...]]] = {}
# A bound on the entries kept between `forget()` calls (callers outside the engine never call it).
_MAX_ENTRIES = 2_000_000


def children(node: cst.CSTNode) -> Tuple[cst.CSTNode, ...]:
    """`node.children`, read once per node."""
    entry = _CHILDREN.get(id(node))
    if entry is not None and entry[0] is node:
        return entry[1]
    found = tuple(node.children)
    if len(_CHILDREN) >= _MAX_ENTRIES:
        _CHILDREN.clear()
    _CHILDREN[id(node)] = (node, found)
    return found


def forget() -> None:
    """Drop the children read so far (and the trees they keep alive)."""
    _CHILDREN.clear()


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
        visit = visits[kind] = getattr(visitor, f"visit_{kind.__name__}", None)
    # Children are skipped only where `visit_<Type>` returned False (`CSTVisitor.on_visit`).
    if visit is None or visit(node) is not False:
        for child in children(node):
            _dispatch(child, visitor, visits, leaves)
    try:
        leave = leaves[kind]
    except KeyError:
        leave = leaves[kind] = getattr(visitor, f"leave_{kind.__name__}", None)
    if leave is not None:
        leave(node)
