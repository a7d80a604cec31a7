"""Jupyter notebooks: code cells linted as one Python source, positions and fixes mapped back.

As ruff does, a notebook's code cells are concatenated into one module (a
pattern may be split across cells: the cells run top to bottom in one
namespace). IPython syntax that is not Python (`%time ...`, `!pip ...`,
`x = !ls`, `obj?`, a `%%capture` line, the whole of a `%%bash` cell) is
replaced by a placeholder line of the same count, `__gradfix_magic__()`
(an unknown call: between two passes it makes a fix unsafe, as any code
gradfix cannot see would), so every row maps back to `cell N, line L`.

Fixes are taken from the engine as whole-line text edits (`Fix.edits`) and
written into the cells they fall in. A fix with an edit
whose lines belong to two cells, or that would rewrite a magic line, is not
applied: it is reported without a fix. Only the `source` values of edited
cells change in the file; every other byte (outputs, metadata, key order,
indentation) stays as it was.

Reading uses `nbformat` for validation (imported only when a notebook is met);
`gradfix check` on `.py` files never imports it.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from gradfix.findings import Finding, TextEdit
from gradfix.files import lines_with_ends

SUFFIX = ".ipynb"
PLACEHOLDER = "__gradfix_magic__()"
# Cell magics whose body is Python run in the kernel's namespace: only their first line is a placeholder.
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "time", "timeit"})
# How many rounds of fixing: each applies every fix that does not overlap another one, then relints.
MAX_ROUNDS = 10

_LINE_MAGIC = re.compile(r"^[ \t]*[%!]")
_ASSIGNED_MAGIC = re.compile(r"^([ \t]*)([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)[ \t]*=[ \t]*[%!]")
_HELP = re.compile(r"^[ \t]*(?:\?{1,2}[\w.]|[\w.]+\?{1,2}[ \t]*$)")


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


class NotebookError(Exception):
    """A file that is not a notebook gradfix can read: the message follows `not a valid notebook: `."""


@dataclass(frozen=True)
class CellEdit(TextEdit):
    """A whole-line edit of one cell: lines [start_line, end_line) of cell `cell` (1-based, all cells counted)."""

    cell: int = 0


@dataclass(frozen=True)
class CellFinding(Finding):
    """A finding in a notebook: `line`/`end_line` count from the start of cell `cell` (`end_cell`)."""

    cell: int = 0
    end_cell: int = 0

    def sort_key(self):  # type: ignore[override]
        return (self.path, self.cell, self.line, self.col, self.code)


@dataclass
class CodeCell:
    index: int  # 1-based among all cells (markdown included), as ruff and Jupyter number them
    original: str  # the cell's source as stored
    lines: List[str]  # the Python view, each line ending in a newline
    magic: List[Optional[str]]  # per line: the original text when the line is a placeholder
    trailing_newline: bool
    start: int = 0  # first row in the concatenation (1-based)
    changed: bool = False

    def text(self) -> str:
        """The cell's source as it would be stored: placeholders back to their magic lines."""
        out = "".join(m if m is not None else line for line, m in zip(self.lines, self.magic))
        if not self.trailing_newline and out.endswith("\n"):
            out = out[:-2] if out.endswith("\r\n") else out[:-1]
        return out


@dataclass
class Notebook:
    path: str
    text: str
    cells: List[CodeCell]
    spans: Dict[int, Tuple[int, int]]  # cell index -> (start, end) of its "source" value in `text`
    indent: str = " "
    ensure_ascii: bool = False
    skipped: bool = False  # not a Python notebook (another kernel's language): nothing to lint
    bom: bool = False  # the file starts with a UTF-8 byte order mark (kept when written)
    _rows: List[Tuple[CodeCell, int]] = field(default_factory=list)

    # -- reading ---------------------------------------------------------------

    @classmethod
    def parse(cls, data: bytes, path: str) -> "Notebook":
        try:
            text = data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8")
        except UnicodeDecodeError as exc:
            raise NotebookError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
        try:
            document = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise NotebookError(_one_line(exc)) from None
        if not isinstance(document, dict):
            raise NotebookError("the top level is not a JSON object")
        major = document.get("nbformat")
        if major != 4:
            raise NotebookError(f"nbformat {major!r} is not supported (only version 4)")
        _validate(text)
        spans = _source_spans(text)
        cells: List[CodeCell] = []
        for number, cell in enumerate(document.get("cells", []), 1):
            if cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            original = "".join(source) if isinstance(source, list) else source
            lines, magic = python_view(original)
            cells.append(CodeCell(number, original, lines, magic, trailing_newline=original.endswith(("\n", "\r"))))
        notebook = cls(path, text, cells, spans, indent=_indent_unit(text), ensure_ascii=_ascii_only(text))
        notebook.skipped = not _is_python(document.get("metadata", {}))
        notebook.bom = data.startswith(b"\xef\xbb\xbf")
        notebook._layout()
        return notebook

    def _layout(self) -> None:
        self._rows = []
        row = 1
        for cell in self.cells:
            cell.start = row
            for k in range(len(cell.lines)):
                self._rows.append((cell, k + 1))
            row += len(cell.lines)

    def source(self) -> bytes:
        """The Python source gradfix lints: the code cells' Python views, concatenated."""
        if self.skipped:
            return b""
        return "".join(line for cell in self.cells for line in cell.lines).encode("utf-8", "surrogatepass")

    # -- positions -------------------------------------------------------------

    def locate(self, row: int) -> Tuple[int, int]:
        """(cell number, row in the cell) of a 1-based row of the concatenation."""
        if not self._rows:
            return (1, row)
        if row < 1:
            return (self._rows[0][0].index, 1)
        if row > len(self._rows):
            cell, k = self._rows[-1]
            return (cell.index, k + row - len(self._rows))
        cell, k = self._rows[row - 1]
        return (cell.index, k)

    def map_error(self, message: str) -> str:
        """`LINE:COL: what` of the concatenation as `cell N:LINE:COL: what`."""
        match = re.match(r"(\d+):(\d+): ", message)
        if not match:
            return message
        cell, row = self.locate(int(match.group(1)))
        return f"cell {cell}:{row}:{match.group(2)}: {message[match.end():]}"

    def map_lines(self, message: str) -> str:
        """A rule's message with the rows it cites (`line 7`, `line 5, 9`) as `line L of cell N`; code in backticks untouched."""
        message = message.replace(f"`{PLACEHOLDER}`", "an IPython magic or shell command").replace(PLACEHOLDER, "<IPython magic>")
        parts = message.split("`")
        for i in range(0, len(parts), 2):  # the even parts are outside backticks
            parts[i] = _CITED.sub(self._cited, parts[i])
        return "`".join(parts)

    def _cited(self, match: "re.Match") -> str:
        rows = [int(n) for n in re.findall(r"\d+", match.group(2))]
        return ", ".join("line {1} of cell {0}".format(*self.locate(row)) for row in rows)

    def map_finding(self, finding: Finding) -> CellFinding:
        cell, line = self.locate(finding.line)
        end_cell, end_line = self.locate(finding.end_line) if finding.end_line > 0 else (cell, 0)
        fix, message = finding.fix, finding.message
        if fix is not None:
            placed, why = self.placement(finding)
            if placed is None:
                fix = None
                message = f"{message} [no fix in a notebook: {why}]"
            else:
                # Line numbers of the fix's statements are the concatenation's: they only ever
                # compare with another fix of the same source (SUPERSEDED_BY, in the engine).
                edits = tuple(CellEdit(s, e, content, cell=c.index) for c, s, e, content in placed)
                fix = dataclasses.replace(fix, edits=edits, unsafe_reason=self.map_lines(fix.unsafe_reason))
        base = {f.name: getattr(finding, f.name) for f in dataclasses.fields(Finding)}
        base.update(line=line, end_line=end_line, message=self.map_lines(message), fix=fix)
        return CellFinding(**base, cell=cell, end_cell=end_cell)

    def placement(self, finding: Finding) -> Tuple[Optional[List[tuple]], str]:
        """The finding's edits as (cell, start, end, content) in cell rows, or (None, why) when they cannot be applied."""
        edits = getattr(finding, "edits", ()) or ()
        if not edits:
            return None, "the rewrite could not be expressed as line edits"
        placed = []
        for edit in sorted(edits, key=lambda e: (e.start_line, e.end_line)):
            start, end = int(edit.start_line), int(edit.end_line)
            if end > start:
                owners = {self._rows[r - 1][0].index for r in range(start, end) if 1 <= r <= len(self._rows)}
                if len(owners) != 1 or end - 1 > len(self._rows):
                    first, last = self.locate(start)[0], self.locate(end - 1)[0]
                    return None, f"the rewrite spans cells {first} to {last}"
                cell, k = self._rows[start - 1]
                if any(cell.magic[i] is not None for i in range(k - 1, k - 1 + end - start)):
                    return None, "the rewrite would change an IPython magic line"
                placed.append((cell, k, k + end - start, edit.content))
            else:
                placed.append((*self._insertion_point(start, edit.content), edit.content))
        return placed, ""

    def _insertion_point(self, row: int, content: str) -> Tuple[CodeCell, int, int]:
        """Where lines inserted before `row` of the concatenation go: (cell, k, k) in the cell's rows.

        Inside a cell, before that cell's line. At a boundary between cells,
        imports (the fix's `from gradfix.autograd import grad_scale`) join the
        end of the cell before, after the imports they follow; other code goes
        at the start of the cell it precedes.
        """
        if row > len(self._rows):
            cell = self._rows[-1][0]
            return cell, len(cell.lines) + 1, len(cell.lines) + 1
        cell, k = self._rows[row - 1]
        if k == 1 and row > 1 and _only_imports(content):
            before = self._rows[row - 2][0]
            return before, len(before.lines) + 1, len(before.lines) + 1
        return cell, k, k

    # -- fixing ----------------------------------------------------------------

    def apply(self, placed: Sequence[tuple]) -> None:
        """Apply placed edits (non-overlapping) to the cells' Python views, bottom-up per cell."""
        for cell, start, end, content in sorted(placed, key=lambda p: (p[0].index, p[1], p[2]), reverse=True):
            new = lines_with_ends(content)
            if new and not new[-1].endswith(("\n", "\r")):
                new[-1] += "\n"
            if start > len(cell.lines) and cell.lines and not cell.lines[-1].endswith(("\n", "\r")):
                cell.lines[-1] += "\n"
            cell.lines[start - 1 : end - 1] = new
            cell.magic[start - 1 : end - 1] = [None] * len(new)
            cell.changed = True
        self._layout()

    def fix(
        self,
        first: "object",
        relint: Callable[[bytes], "object"],
        *,
        unsafe_fixes: bool,
    ) -> Tuple[List["object"], "object"]:
        """Apply fixes round by round; return (the findings applied, in cell positions, and the last lint
        result of the concatenation).

        `first` is the engine's result (with edits) for the current source;
        `relint(source)` lints a new concatenation the same way.
        """
        result = first
        applied: List["object"] = []
        for _ in range(MAX_ROUNDS):
            if getattr(result, "error", None):
                break
            taken: List[tuple] = []
            for finding in sorted(result.findings, key=lambda f: f.fix.first or (f.line, f.col) if f.fix else (f.line, f.col)):
                fix = finding.fix
                if fix is None or not (fix.safe or unsafe_fixes):
                    continue
                placed, _ = self.placement(finding)
                if placed is None:
                    continue
                fresh = [p for p in placed if not any(_same(p, q) for q in taken)]
                if any(_overlap(p, q) for p in fresh for q in taken):
                    continue  # left for the next round, against the rewritten source
                taken.extend(fresh)
                applied.append(self.map_finding(finding))  # mapped before the cells change
            if not taken:
                break
            self.apply(taken)
            result = relint(self.source())
        return applied, result

    def dumps(self) -> bytes:
        """The notebook file with the changed cells' sources replaced; every other byte as read."""
        out: List[str] = []
        at = 0
        for cell in sorted((c for c in self.cells if c.changed), key=lambda c: self.spans[c.index][0]):
            start, end = self.spans[cell.index]
            out.append(self.text[at:start])
            out.append(self._render_source(cell, self.text[start:end], start))
            at = end
        out.append(self.text[at:])
        new = "".join(out)
        # What was written must read back as intended: the cells' new sources, everything else equal.
        before, after = json.loads(self.text), json.loads(new)
        for cell in self.cells:
            stored = after["cells"][cell.index - 1]["source"]
            if ("".join(stored) if isinstance(stored, list) else stored) != cell.text():
                raise RuntimeError(f"cell {cell.index} did not round-trip")  # pragma: no cover - a gradfix bug
            before["cells"][cell.index - 1]["source"] = after["cells"][cell.index - 1]["source"]
        if before != after:
            raise RuntimeError("the notebook changed outside the edited cells")  # pragma: no cover - a gradfix bug
        return (b"\xef\xbb\xbf" if self.bom else b"") + new.encode("utf-8")

    def _render_source(self, cell: CodeCell, old: str, offset: int) -> str:
        text = cell.text()
        dump = lambda s: json.dumps(s, ensure_ascii=self.ensure_ascii)  # noqa: E731
        if not old.startswith("["):
            return dump(text)
        lines = text.splitlines(True)  # as nbformat splits a source it writes
        if not lines:
            return "[]"
        # The layout of the list as stored: its elements' indentation and the closing bracket's.
        match = re.match(r"\[(\s*)", old)
        inner = match.group(1) if match else ""
        line_start = self.text.rfind("\n", 0, offset) + 1
        key_indent = re.match(r"[ \t]*", self.text[line_start:offset]).group(0)  # type: ignore[union-attr]
        if "\n" in inner:
            element = inner[inner.rfind("\n") + 1 :]
            closing = re.search(r"\n([ \t]*)\]$", old)
            close = closing.group(1) if closing else key_indent
        elif "\n" in self.text:
            element, close = key_indent + self.indent, key_indent
        else:  # a notebook written on one line, with json.dumps's default separators or compact ones
            return "[" + ("," if '": ' not in self.text else ", ").join(dump(line) for line in lines) + "]"
        return "[\n" + ",\n".join(element + dump(line) for line in lines) + "\n" + close + "]"

    def script(self, *, original: bool = False) -> str:
        """The code cells as one script to execute (`gradfix verify`): IPython-only lines become `None`.

        `original`: the cells as read, before any fix."""
        lines = [line for cell in self.cells for line in (python_view(cell.original)[0] if original else cell.lines)]
        return "".join(lines).replace(PLACEHOLDER, "None")


# -- the Python view of a cell -------------------------------------------------------------


def python_view(source: str) -> Tuple[List[str], List[Optional[str]]]:
    """The cell's lines with IPython-only lines replaced by placeholders, and the replaced lines' originals."""
    lines = lines_with_ends(source)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    magic: List[Optional[str]] = [None] * len(lines)
    if not lines:
        return lines, magic
    first = lines[0].strip()
    body_from = 0
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].split() else ""
        if name not in PYTHON_CELL_MAGICS:  # %%bash, %%writefile, %%html...: not Python at all
            return [_placeholder("", line) for line in lines], _originals(lines, range(len(lines)))
        magic[0] = lines[0]
        lines[0] = _placeholder("", lines[0])
        body_from = 1
    if _parses("".join(lines)):
        return lines, magic
    k = body_from
    while k < len(lines):
        line = lines[k]
        if _LINE_MAGIC.match(line) or _HELP.match(line) or _ASSIGNED_MAGIC.match(line):
            indent = re.match(r"[ \t]*", line).group(0)  # type: ignore[union-attr]
            assigned = _ASSIGNED_MAGIC.match(line)
            magic[k] = line
            lines[k] = (
                f"{assigned.group(1)}{assigned.group(2)} = {PLACEHOLDER}{_ending(line)}" if assigned
                else _placeholder(indent, line)
            )
            while line.rstrip("\r\n").endswith("\\") and k + 1 < len(lines):  # a magic continued on the next line
                k += 1
                line = lines[k]
                magic[k] = line
                lines[k] = _placeholder(indent, line)
        k += 1
    return lines, magic


def _placeholder(indent: str, line: str) -> str:
    return f"{indent}{PLACEHOLDER}{_ending(line)}"


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")):] or "\n"


def _originals(lines: List[str], rows) -> List[Optional[str]]:
    return [lines[k] if k in rows else None for k in range(len(lines))]


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


_IMPORT_LINE = re.compile(r"^\s*(?:from\s+[\w.]+\s+import\b|import\b|$)")


def _only_imports(content: str) -> bool:
    lines = lines_with_ends(content)
    return bool(lines) and all(_IMPORT_LINE.match(line) for line in lines)


def _same(p: tuple, q: tuple) -> bool:
    return p[0] is q[0] and p[1:] == q[1:]


def _overlap(p: tuple, q: tuple) -> bool:
    """Two placed edits of one cell that touch the same lines, or insert at the same place."""
    if p[0] is not q[0]:
        return False
    (ps, pe), (qs, qe) = p[1:3], q[1:3]
    if ps == pe or qs == qe:  # an insertion: conflicts with anything starting or ending there
        return qs <= ps <= qe or ps <= qs <= pe
    return ps < qe and qs < pe


# -- the file --------------------------------------------------------------------------------


def _validate(text: str) -> None:
    try:
        import nbformat
    except ImportError:  # pragma: no cover - nbformat is a dependency; without it, the JSON checks above
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            node = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
            nbformat.validate(node)
    except Exception as exc:  # noqa: BLE001 - nbformat raises ValidationError, NotJSONError, KeyError...
        raise NotebookError(_one_line(exc)) from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n", 1)[0].split())
    if len(text) > 200:
        text = text[:197] + "..."
    return text or type(exc).__name__


def _is_python(metadata) -> bool:
    if not isinstance(metadata, dict):
        return True
    for key, name in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(name), str) and value[name]:
            return value[name].lower() == "python"
    return True


def _indent_unit(text: str) -> str:
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else " "


def _ascii_only(text: str) -> bool:
    """Whether the file escapes non-ASCII characters (`\\u00e9`) rather than writing them."""
    return bool(re.search(r"\\u[0-9a-fA-F]{4}", text)) and not re.search(r"[^\x00-\x7f]", text)


_WS = re.compile(r"[ \t\n\r]*")
_CITED = re.compile(r"\b(lines?) (\d+(?:, \d+)*)\b")


def _source_spans(text: str) -> Dict[int, Tuple[int, int]]:
    """(start, end) in `text` of each cell's `source` value, keyed by the cell's 1-based number."""
    decoder = json.JSONDecoder()
    spans: Dict[int, Tuple[int, int]] = {}

    def skip(at: int) -> int:
        return _WS.match(text, at).end()  # type: ignore[union-attr]

    def members(at: int):
        """Yield (key, value start) of the object at `at` and, after the last, the end index."""
        at = skip(at)
        assert text[at] == "{"
        at = skip(at + 1)
        if text[at] == "}":
            yield None, at + 1
            return
        while True:
            key, at = json.decoder.scanstring(text, skip(at) + 1)
            at = skip(at)
            assert text[at] == ":"
            start = skip(at + 1)
            end = yield key, start
            at = skip(end)
            if text[at] == "}":
                yield None, at + 1
                return
            assert text[at] == ","
            at += 1

    def value_end(at: int) -> int:
        return decoder.raw_decode(text, at)[1]

    top = members(0)
    key, at = next(top)
    while key is not None:
        if key == "cells":
            pos = skip(at + 1)
            number = 0
            while text[pos] != "]":
                number += 1
                cell = members(pos)
                ckey, cat = next(cell)
                while ckey is not None:
                    cend = value_end(cat)
                    if ckey == "source":
                        spans[number] = (cat, cend)
                    ckey, cat = cell.send(cend)
                pos = skip(cat)
                if text[pos] == ",":
                    pos = skip(pos + 1)
            end = pos + 1
        else:
            end = value_end(at)
        key, at = top.send(end)
    return spans
