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
