"""Where the nodes of a parsed file sit, from one codegen pass.

libcst computes positions by writing the module out (its `PositionProvider`). The rules need
every node's syntactic position; a fix also needs the whitespace-inclusive span of the statements
it replaces (from the first comment or blank line a statement owns to the end of its newline:
`fixes.rewrite.Layout`). libcst's `WhitespaceInclusivePositionProvider` would write the whole file
out a second time for those; here one pass records both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Tuple

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

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack[-1]  # what the whitespace-inclusive provider records as the start
        super().after_codegen(node)
        if type(node) in _STATEMENTS:
            self.spans[node] = CodeRange(start, CodePosition(self.line, self.column))


def file_positions(module: cst.Module) -> Tuple[Dict[cst.CSTNode, CodeRange], Dict[cst.CSTNode, CodeRange]]:
    """(positions, spans): every node's syntactic range, as libcst's `PositionProvider` gives it, and
    every statement's whitespace-inclusive range, as its `WhitespaceInclusivePositionProvider` gives it."""
    computed = _Computed()
    state = _State(default_indent=module.default_indent, default_newline=module.default_newline, provider=computed)  # type: ignore[arg-type]
    module._codegen(state)
    return computed._computed, state.spans
