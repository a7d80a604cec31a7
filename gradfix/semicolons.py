"""Statements joined by `;` are read one per line.

Every analysis of gradfix reads a block as a list of lines, one statement each: written
`l1 = f(x.detach(), y); l1.backward(retain_graph=True)`, the two statements were one line no
rule could look into. Before the rules run, the engine splits every such line into one line per
statement (`split`), runs the rules on that text, and maps what they report back to the file as
written (`LineMap.finding`):

- positions: a statement moved to a line of its own gets its line and column back, and every
  line below it its number;
- the line numbers that messages cite (`line 12`, `lines 12, 14`), outside code in backticks;
- each fix's edits. An edit that touches part of a joined line replaces the whole line, written
  one statement per line: a fix splits the lines it changes and no others.

The rules see exactly the statements Python runs, in the same order; only line breaks differ,
so what the rules prove about the split text holds for the file.

Not split (such lines stay one opaque statement, as before): a line whose `;` has a backslash
continuation beside it (removing the `;` would change the line count), a line whose comment
suppresses gradfix (`# noqa`, `# noqa: GF001`: once a fix of another statement had split it, the
comment would stand after its last statement only), and one-line compound statements (`if c: a;
b`, `for u in r: s += u`). A trailing `;` stays on the last statement (in a notebook it hides
the cell's output).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from gradfix.files import lines_with_ends
from gradfix.findings import NOQA, Finding, Fix, TextEdit
from gradfix.analysis.walk import node_types, walk_tree

# The nodes whose children may hold a statement line: the statement-level walk goes no deeper.
_CONTAINERS = (
    cst.Module,
    cst.IndentedBlock,
    cst.BaseCompoundStatement,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)
# (compared by exact type, once per node the walk enters: `walk.node_types`)
_CONTAINER_TYPES = node_types(*_CONTAINERS)


@dataclass(frozen=True)
class LineMap:
    """Where the lines of the split text came from.

    Only moved statements change the mapping: from the line a statement was moved to, every line
    is `offset` lines off its line in the file, and on that line itself columns are `shift` off.
    """

    starts: Tuple[int, ...]  # the split text's line of each moved statement, ascending
    offsets: Tuple[int, ...]  # original line - split line, from that line on
    shifts: Tuple[int, ...]  # original column - split column, on that line only
    lines: Tuple[str, ...]  # the split text's lines, the last ending in a newline (as fixes edit it)

    def line(self, line: int) -> int:
        k = bisect_right(self.starts, line) - 1
        return line if k < 0 else line + self.offsets[k]

    def position(self, line: int, column: int) -> Tuple[int, int]:
        k = bisect_right(self.starts, line) - 1
        if k < 0:
            return line, column
        return line + self.offsets[k], column + (self.shifts[k] if self.starts[k] == line else 0)

    def finding(self, finding: Finding) -> Finding:
        """The finding as the file is written."""
        line, col = self.position(finding.line, finding.col)
        end_line, end_col = self.position(finding.end_line, finding.end_col) if finding.end_line else (0, 0)
        return replace(
            finding,
            line=line,
            col=col,
            end_line=end_line,
            end_col=end_col,
            message=_this_line(self.message(finding.message), line),
            fix=None if finding.fix is None else self._fix(finding.fix),
        )

    def message(self, text: str) -> str:
        """`text` with the line numbers it cites (`line 12`, `lines 12, 14`) mapped, code in backticks left alone."""
        parts = text.split("`")
        # An odd count means quoted code holds a backtick (in a string literal): the spans cannot be
        # told apart, and the citations matter more than such code's text.
        step = 2 if len(parts) % 2 else 1
        for k in range(0, len(parts), step):  # the even parts are outside backticks
            parts[k] = _CITED.sub(lambda m: m.group(1) + self._cited(m.group(2)), parts[k])
        return "`".join(parts)

    def _cited(self, numbers: str) -> str:
        """`12, 14` mapped, a line of the file cited once (two statements of one line: `line 5`)."""
        mapped = dict.fromkeys(str(self.line(int(n))) for n in _NUMBER.findall(numbers))
        return ", ".join(mapped)

    def _fix(self, fix: Fix) -> Fix:
        return replace(
            fix,
            description=self.message(fix.description),
            unsafe_reason=self.message(fix.unsafe_reason),
            edits=self.edits(fix.edits),
            first=None if fix.first is None else self.position(*fix.first),
            statements=frozenset(self.position(*p) for p in fix.statements),
        )

    def edits(self, edits: Sequence[TextEdit]) -> Tuple[TextEdit, ...]:
        """One fix's edits of the split text as edits of the file.

        Each edit grows to whole lines of the file (every split line from a line it touches),
        filled in from the split text; edits that then overlap are made one.
        """
        grown = sorted(((self._grown(edit), edit) for edit in edits), key=lambda pair: pair[0])
        merged: List[Tuple[int, int, List[TextEdit]]] = []
        for (start, end), edit in grown:
            if merged and start < merged[-1][1]:  # within a line of the file another edit grew to
                first, last, inside = merged.pop()
                merged.append((first, max(last, end), inside + [edit]))
            else:
                merged.append((start, end, [edit]))
        result = []
        for start, end, inside in merged:
            if len(inside) == 1 and (inside[0].start_line, inside[0].end_line) == (start, end):
                content = inside[0].content  # it did not grow
            else:
                content = "".join(splice(list(self.lines[start - 1 : end - 1]), inside, start))
            result.append(TextEdit(self.line(start), self.line(end - 1) + 1 if end > start else self.line(start), content))
        return tuple(result)

    def _inside(self, line: int) -> bool:
        """Whether split line `line` continues the file line above it (a moved statement's line)."""
        return 1 < line <= len(self.lines) and self.line(line - 1) == self.line(line)

    def _grown(self, edit: TextEdit) -> Tuple[int, int]:
        """The split lines an edit must replace so that it covers whole lines of the file."""
        start, end = edit.start_line, edit.end_line
        if start == end and not self._inside(start):
            return start, end  # an insertion between lines of the file
        last = end - 1 if end > start else start
        while self._inside(start):
            start -= 1
        while last < len(self.lines) and self._inside(last + 1):
            last += 1
        return start, last + 1


def _this_line(message: str, line: int) -> str:
    """`(line 5 and here)` on line 5 itself (two statements of one joined line) says so."""
    return message.replace(f"line {line} and here", "earlier on this line and here").replace(
        f"(line {line}, in ", "(earlier on this line, in "
    )


_CITED = re.compile(r"\b(lines? )(\d+(?:, \d+)*)")
_NUMBER = re.compile(r"\d+")


def splice(lines: List[str], edits: Sequence[TextEdit], first: int = 1) -> List[str]:
    """`lines` (the first numbered `first`) with `edits` made, bottom-up so numbers stay valid;
    at one line an insertion goes before the edit that starts there (it was found before it)."""
    for edit in sorted(edits, key=lambda e: (e.start_line, e.end_line), reverse=True):
        lines[edit.start_line - first : edit.end_line - first] = [edit.content] if edit.content else []
    return lines


def split(module: cst.Module) -> Optional[Tuple[cst.Module, LineMap]]:
    """The module with every `;`-joined line split into lines of one statement, and where its
    lines came from; None when no line is split."""
    if not _has_joined_line(module):
        return None
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    splitter = _Splitter()
    new = module.visit(splitter)
    if not splitter.moved:
        return None
    # Each moved statement adds one line break before itself and nothing else changes the line
    # count, so the k-th moved statement of the file (in source order) is k lines further down.
    moved = sorted((positions[s].start.line, positions[s].start.column, positions[first].start.column) for s, first in splitter.moved)
    starts, offsets, shifts = [], [], []
    for k, (line, column, indent) in enumerate(moved, start=1):
        starts.append(line + k)
        offsets.append(-k)
        shifts.append(column - indent)  # it now starts where the line's first statement does
    code = new.code
    if code and not code.endswith(("\n", "\r")):
        code += new.default_newline
    return new, LineMap(tuple(starts), tuple(offsets), tuple(shifts), tuple(lines_with_ends(code)))


def _splittable(line: cst.SimpleStatementLine) -> bool:
    if len(line.body) < 2:
        return False
    comment = line.trailing_whitespace.comment
    if comment is not None:
        match = NOQA.search(comment.value)
        if match and (match.group("codes") is None or "GF" in match.group("codes").upper()):
            return False
    for statement in line.body:
        semicolon = statement.semicolon
        if isinstance(semicolon, cst.Semicolon):
            for space in (semicolon.whitespace_before, semicolon.whitespace_after):
                if not isinstance(space, cst.SimpleWhitespace) or "\\" in space.value:
                    return False
    return True


class _Finder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) is cst.SimpleStatementLine and _splittable(node):
            self.found = True
        return not self.found and type(node) in _CONTAINER_TYPES


def _has_joined_line(module: cst.Module) -> bool:
    finder = _Finder()
    walk_tree(module, finder)
    return finder.found


class _Splitter(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        # (statement moved to a line of its own, the first statement of its line), as in the file
        self.moved: List[Tuple[cst.BaseSmallStatement, cst.BaseSmallStatement]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return isinstance(node, _CONTAINERS)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._lines(updated_node.body))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._lines(updated_node.body))

    def _lines(self, body: Sequence[cst.BaseStatement]) -> List[cst.BaseStatement]:
        result: List[cst.BaseStatement] = []
        for statement in body:
            if not isinstance(statement, cst.SimpleStatementLine) or not _splittable(statement):
                result.append(statement)
                continue
            last = len(statement.body) - 1
            parts = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) if k < last else s for k, s in enumerate(statement.body)]
            for k, part in enumerate(parts):
                if k:
                    self.moved.append((statement.body[k], statement.body[0]))
                result.append(
                    cst.SimpleStatementLine(
                        body=[part],
                        # The comments and blank lines above stay above the first statement,
                        # the line's own comment after the last.
                        leading_lines=statement.leading_lines if k == 0 else (),
                        trailing_whitespace=statement.trailing_whitespace if k == last else cst.TrailingWhitespace(),
                    )
                )
        return result
