"""Where the nodes of a parsed file sit, and under which node, from one codegen pass.

libcst computes positions by writing the module out (its `PositionProvider`). The rules need
every node's syntactic position and its parent; a fix also needs the whitespace-inclusive span of
the statements it replaces (from the first comment or blank line a statement owns to the end of
its newline: `fixes.rewrite.Layout`). libcst's providers would write the file out once more for
the spans and walk it once more for the parents (its `ParentNodeProvider`, which asks every node
for its children, is slower than the writing); here one pass records all three, and the text.
Writing a node writes its children inside it, so the node being written when a child starts is its
parent.

libcst's own state turns every token into a line and column as it is written (a regular
expression per token) and builds two positions per node; most nodes' positions are never read.
The order the pass wrote the nodes in is also the module's walk order but for two node types
(`walk.written_order`), which spares the analyses' first walk of the whole file.

Here the pass records, per node, only the indexes of the tokens where it starts and ends; a node's
line and column are worked out from the written text when a rule first asks (`_Ranges`).
`tests/test_positions.py` checks that all of it equals what libcst's providers give.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Callable, Dict, Iterator, List, Mapping, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange

from gradfix.analysis.walk import node_types, written_order


# The node types that stand in a block (a module or an indented body); compared by exact type,
# once per node of the file, so the test stays a set lookup.
_STATEMENTS = node_types(cst.BaseStatement)

# What libcst counts as a line break when it positions a token (`position_provider.NEWLINE_RE`).
_NEWLINE = re.compile(r"\r\n?|\n")

# A node's range as token indexes: it starts before token `start` and ends before token `end`. Keyed
# by `id(node)` (with the node, which keeps the id its own): libcst's `CSTNode.__hash__` is a Python
# method, and the pass looks up and stores every node (stop 32).
_Marks = Dict[int, Tuple[cst.CSTNode, int, int]]


class _Syntactic:
    """`record_syntactic_position`: the node's range is what it writes inside the `with` (or the
    start of `start_node`, the end of `end_node`), and overrides the whole node's range."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: "_State", node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = len(self.state.tokens)

    def __exit__(self, *exc) -> None:
        marks = self.state.marks
        start = marks[id(self.start_node)][1] if self.start_node is not None else self.start
        end = marks[id(self.end_node)][2] if self.end_node is not None else len(self.state.tokens)
        marks[id(self.node)] = (self.node, start, end)


class _State(CodegenState):
    """libcst's codegen state, recording token indexes (as `PositionProvidingCodegenState` records
    positions), the statements' whitespace-inclusive ranges and every node's parent."""

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.marks: _Marks = {}
        self.spans: _Marks = {}
        self.parents: Dict[cst.CSTNode, cst.CSTNode] = {}
        self.writing: List[cst.CSTNode] = []
        self.starts: List[int] = []
        self.drop_last = False
        self.count = 0  # nodes written: more than the parents and the module where a node is shared

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.count += 1
        if self.writing:
            self.parents[node] = self.writing[-1]
        self.writing.append(node)
        self.starts.append(len(self.tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.starts.pop()
        self.writing.pop()
        end = len(self.tokens)
        # A syntactic range recorded inside the node is kept (as libcst's state keeps it).
        key = id(node)
        if key not in self.marks:
            self.marks[key] = (node, start, end)
        if type(node) in _STATEMENTS:
            self.spans[key] = (node, start, end)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        return _Syntactic(self, node, start_node, end_node)

    def pop_trailing_newline(self) -> None:
        # libcst's state has counted the dropped newline into its line and column, so the module
        # ends after it: the token stays for the positions and is left out of the text.
        self.drop_last = bool(self.tokens)


class _Text:
    """Where each token written starts in the text, and where each line starts: what turns a token
    index into a line and column (made once, on the first position asked)."""

    def __init__(self, tokens: List[str], text: str) -> None:
        self.offsets = list(accumulate(map(len, tokens), initial=0))
        self.line_starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def position(self, index: int) -> CodePosition:
        offset = self.offsets[index]
        line = bisect_right(self.line_starts, offset)
        return CodePosition(line, offset - self.line_starts[line - 1])


class _Ranges(Mapping):
    """node -> CodeRange, from the token indexes of `marks`, computed when first read."""

    def __init__(self, marks: _Marks, text: Callable[[], _Text]) -> None:
        self._marks = marks
        self._text = text
        self._cache: Dict[int, CodeRange] = {}

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        key = id(node)
        found = self._cache.get(key)
        if found is None:
            entry = self._marks.get(key)
            if entry is None or entry[0] is not node:
                raise KeyError(node)
            text = self._text()
            found = self._cache[key] = CodeRange(text.position(entry[1]), text.position(entry[2]))
        return found

    def __contains__(self, node: object) -> bool:
        entry = self._marks.get(id(node))
        return entry is not None and entry[0] is node

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return (entry[0] for entry in self._marks.values())

    def __len__(self) -> int:
        return len(self._marks)


@dataclass(frozen=True)
class NodeMaps:
    """A parsed file's nodes: `positions`, every node's syntactic range (libcst's `PositionProvider`);
    `spans`, every statement's whitespace-inclusive range (its `WhitespaceInclusivePositionProvider`);
    `parents`, every node's parent, the module's left out (its `ParentNodeProvider`); `code`, the
    text that pass wrote (the module's `code`, which a second codegen pass would write again)."""

    positions: Mapping[cst.CSTNode, CodeRange]
    spans: Mapping[cst.CSTNode, CodeRange]
    parents: Dict[cst.CSTNode, cst.CSTNode]
    code: str


def node_maps(module: cst.Module) -> NodeMaps:
    """The positions, statement spans, parents and text of a module's nodes, from one codegen pass."""
    state = _State(module.default_indent, module.default_newline)
    module._codegen(state)
    if state.count == len(state.parents) + 1:
        # Every node written once, parents first: the module's nodes in (nearly) walk order.
        written_order(module, state.parents)
    written = "".join(state.tokens)
    code = written[: -len(state.tokens[-1])] if state.drop_last else written
    made: List[_Text] = []

    def text() -> _Text:
        if not made:
            made.append(_Text(state.tokens, written))
        return made[0]

    return NodeMaps(_Ranges(state.marks, text), _Ranges(state.spans, text), state.parents, code)
