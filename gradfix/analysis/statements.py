"""Walking a file's statements without walking its expressions.

No statement stands inside an expression (a lambda's body is an expression), so every class,
function and block of a file is reached through modules, blocks, compound statements and their
clauses alone. A file-wide question about those (which classes define properties, where each
block sits) is answered with a walk over that much of the tree, a small part of a libcst
visitor's walk, which enters every expression.
"""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from gradfix.analysis.exprs import last_name
from gradfix.analysis.vocabulary import PASSING_CONTEXTS

# What may hold a statement: statements themselves (an `if` in an `elif` chain is one) and the
# parts of compound statements that hold blocks.
_HOLDERS = (
    cst.BaseStatement,
    cst.BaseSuite,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)


def statement_parts(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The children of a module, block, compound statement or clause that may hold statements, in order."""
    if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return []  # small statements only: no block below
    return [child for child in node.children if isinstance(child, _HOLDERS)]


def walk_statements(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every statement, block and clause under `root` (itself first), depth first in source order."""
    todo = [root]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(reversed(statement_parts(node)))


def class_defs(root: cst.CSTNode) -> Iterator[cst.ClassDef]:
    """Every class statement under `root`, at any depth (in functions and branches too), in source order."""
    return (node for node in walk_statements(root) if isinstance(node, cst.ClassDef))


def may_catch(statement: cst.CSTNode) -> bool:
    """A `try` with a handler, or a `with` whose context manager may swallow an exception
    (`contextlib.suppress`, any `__exit__` that may return True): code after it may run although
    its body stopped early."""
    if isinstance(statement, (cst.Try, cst.TryStar)):
        return bool(statement.handlers)
    return isinstance(statement, cst.With) and not all(_passing(item) for item in statement.items)


def _passing(item: cst.WithItem) -> bool:
    """A `with` item whose context manager is known to let every exception through."""
    entered = item.item.func if isinstance(item.item, cst.Call) else item.item
    return last_name(entered) in PASSING_CONTEXTS
