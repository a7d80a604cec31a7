"""Where the nodes of a parsed file sit, and under which node, from one codegen pass.

libcst computes positions by writing the module out (its `PositionProvider`). The rules need
every node's syntactic position and its parent; a fix also needs the whitespace-inclusive span of
the statements it replaces (from the first comment or blank line a statement owns to the end of
its newline: `fixes.rewrite.Layout`). libcst's providers would write the file out once more for
the spans and walk it once more for the parents (its `ParentNodeProvider`, which asks every node
for its children, is slower than the writing); here one pass records all three. Writing a node
writes its children inside it, so the node being written when a child starts is its parent:
`tests/test_positions.py` checks that all three equal what libcst's providers give.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

import libcst as cst
from libcst.metadata import CodePosition, CodeRange
from libcst.metadata.position_provider import PositionProvidingCodegenState


def _subclasses(cls: type) -> frozenset:
    found = set()
    todo = [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return frozenset(found)


# The node types that stand in a block (a module or an indented body); compared by exact type,
# once per node of the file, so the test stays a set lookup.
_STATEMENTS = _subclasses(cst.BaseStatement)


class _Computed:
    """What libcst's codegen state writes syntactic positions into (a provider's `_computed`)."""

    def __init__(self) -> None:
        self._computed: Dict[cst.CSTNode, CodeRange] = {}


@dataclass(frozen=False)
class _State(PositionProvidingCodegenState):
    spans: Dict[cst.CSTNode, CodeRange] = field(default_factory=dict)
    parents: Dict[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)
    writing: List[cst.CSTNode] = field(default_factory=list)

    def before_codegen(self, node: cst.CSTNode) -> None:
        super().before_codegen(node)
        if self.writing:
            self.parents[node] = self.writing[-1]
        self.writing.append(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack[-1]  # what the whitespace-inclusive provider records as the start
        super().after_codegen(node)
        self.writing.pop()
        if type(node) in _STATEMENTS:
            self.spans[node] = CodeRange(start, CodePosition(self.line, self.column))


@dataclass(frozen=True)
class NodeMaps:
    """A parsed file's nodes: `positions`, every node's syntactic range (libcst's `PositionProvider`);
    `spans`, every statement's whitespace-inclusive range (its `WhitespaceInclusivePositionProvider`);
    `parents`, every node's parent, the module's left out (its `ParentNodeProvider`)."""

    positions: Dict[cst.CSTNode, CodeRange]
    spans: Dict[cst.CSTNode, CodeRange]
    parents: Dict[cst.CSTNode, cst.CSTNode]


def node_maps(module: cst.Module) -> NodeMaps:
    """The positions, statement spans and parents of a module's nodes, from one codegen pass."""
    computed = _Computed()
    state = _State(default_indent=module.default_indent, default_newline=module.default_newline, provider=computed)  # type: ignore[arg-type]
    module._codegen(state)
    return NodeMaps(computed._computed, state.spans, state.parents)
