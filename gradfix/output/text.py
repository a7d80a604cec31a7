"""The human-readable renderers: concise, full (with source excerpt and fix diff), statistics."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from gradfix.output._common import (
    BLUE_BOLD,
    BOLD,
    CYAN,
    GREEN,
    RED,
    RED_BOLD,
    Sources,
    cell_of,
    edits_of,
    end_of,
    source_key,
    rule_summary,
    split_lines,
    style,
)

# Lines of context around the reported span (excerpt) and around each edit (diff).
EXCERPT_CONTEXT = 2
DIFF_CONTEXT = 1
TAB = 4


def offered(finding: Any, unsafe_fixes: bool) -> bool:
    """Whether a fix of `finding` would be applied: a safe one, or any one with `--unsafe-fixes`."""
    fix = finding.fix
    return fix is not None and (bool(fix.safe) or unsafe_fixes)


def header(finding: Any, color: bool, unsafe_fixes: bool = False) -> str:
    """`path:line:col: CODE [*] message`, coloured like ruff's concise output when asked."""
    sep = style(":", CYAN, color)
    mark = " " + style("[*]", CYAN, color) if offered(finding, unsafe_fixes) else ""
    cell = cell_of(finding)
    where = style(finding.path, BOLD, color) + (f"{sep}cell {cell}" if cell is not None else "")
    return (
        f"{where}{sep}{finding.line}{sep}{finding.col}{sep} "
        f"{style(finding.code, RED_BOLD, color)}{mark} {finding.message}"
    )


def render_concise(
    findings: Sequence[Any], sources: Sources, *, show_fixes: bool, color: bool, unsafe_fixes: bool = False
) -> str:
    out: List[str] = []
    for finding in findings:
        out.append(header(finding, color, unsafe_fixes))
        if show_fixes and finding.fix is not None:
            out.extend(help_lines(finding, color))
            out.extend(diff_lines(finding, sources, color))
            out.append("")
    return "".join(line + "\n" for line in out)


def render_full(findings: Sequence[Any], sources: Sources, *, color: bool, unsafe_fixes: bool = False) -> str:
    blocks: List[str] = []
    for finding in findings:
        lines = [header(finding, color, unsafe_fixes)]
        lines.extend(excerpt_lines(finding, sources, color))
        lines.extend(help_lines(finding, color))
        lines.extend(diff_lines(finding, sources, color))
        blocks.append("".join(line + "\n" for line in lines))
    return "\n".join(blocks)


def _display(text: str) -> str:
    return text.expandtabs(TAB)


def _gutter_row(number: str, width: int, text: str, color: bool) -> str:
    gutter = style(f"{number:>{width}} |", BLUE_BOLD, color)
    return f"{gutter} {text}" if text else gutter


def excerpt_lines(finding: Any, sources: Sources, color: bool) -> List[str]:
    """The reported lines with EXCERPT_CONTEXT lines around them and a caret under the span's first line.

    Empty when the source is unavailable or the reported line is out of range.
    """
    lines = sources.lines(source_key(finding))
    if lines is None or not 1 <= finding.line <= len(lines):
        return []
    end_line, end_col = end_of(finding)
    end_line = min(max(end_line, finding.line), len(lines))
    first = max(1, finding.line - EXCERPT_CONTEXT)
    last = min(len(lines), end_line + EXCERPT_CONTEXT)
    width = len(str(last))
    out = [_gutter_row("", width, "", color)]
    for number in range(first, last + 1):
        text = lines[number - 1]
        out.append(_gutter_row(str(number), width, _display(text), color))
        if number == finding.line:
            start = max(finding.col, 1) - 1
            stop = end_col - 1 if end_line == finding.line else len(text)
            offset = len(_display(text[:start]))
            span = len(_display(text[:stop])) - offset
            carets = style("^" * max(span, 1) + " " + finding.code, RED_BOLD, color)
            out.append(_gutter_row("", width, " " * offset + carets, color))
    out.append(_gutter_row("", width, "", color))
    return out


def help_lines(finding: Any, color: bool) -> List[str]:
    fix = finding.fix
    if fix is None:
        return []
    label = style("help", BOLD, color)
    if fix.safe:
        return [f"{label}: {fix.description}"]
    out = [f"{label}: unsafe fix: {fix.description}"]
    if fix.unsafe_reason:
        out.append(f"{style('note', BOLD, color)}: unsafe because {fix.unsafe_reason}")
    return out


# A diff row: (old line number, new line number, sign, text); None is a gap between hunks.
_Row = Optional[Tuple[Optional[int], Optional[int], str, str]]


def diff_rows(finding: Any, sources: Sources, edits: Optional[List[Any]] = None, lines: Optional[List[str]] = None) -> List[_Row]:
    """The fix's edits as diff rows with DIFF_CONTEXT lines of context around each edit.

    Lines the source does not have (missing file, out of range) are not shown
    as context; removed ones collapse into one `<... source unavailable>` row.
    `edits`/`lines`: a subset of the edits and the source they apply to (one notebook cell's).
    """
    edits = edits_of(finding) if edits is None else edits
    rows: List[_Row] = []
    if not edits:
        return rows
    lines = (sources.lines(finding.path) or []) if lines is None else lines

    def text(number: int) -> Optional[str]:
        return lines[number - 1] if 1 <= number <= len(lines) else None

    delta = 0  # new line number minus old line number, after the edits so far
    shown = 0  # the last old line shown
    previous_end = 1
    for index, edit in enumerate(edits):
        start = max(int(edit.start_line), previous_end, 1)
        end = max(int(edit.end_line), start)
        context = [k for k in range(max(start - DIFF_CONTEXT, shown + 1, 1), start) if text(k) is not None]
        first_shown = context[0] if context else start
        if rows and first_shown > shown + 1:
            rows.append(None)
        rows.extend((k, k + delta, " ", text(k) or "") for k in context)
        number = start
        while number < end:
            line = text(number)
            if line is not None:
                rows.append((number, None, "-", line))
                number += 1
                continue
            stop = number
            while stop < end and text(stop) is None:
                stop += 1
            span = f"line {number}" if stop - number == 1 else f"lines {number}-{stop - 1}"
            rows.append((number, None, "-", f"<{span}: source unavailable>"))
            number = stop
        added = split_lines(edit.content)
        rows.extend((None, start + delta + j, "+", line) for j, line in enumerate(added))
        delta += len(added) - (end - start)
        shown = max(shown, end - 1)
        following = int(edits[index + 1].start_line) if index + 1 < len(edits) else end + DIFF_CONTEXT
        for k in range(end, min(end + DIFF_CONTEXT, following)):
            if text(k) is None:
                break
            rows.append((k, k + delta, " ", text(k) or ""))
            shown = k
        previous_end = end
    return rows


def diff_lines(finding: Any, sources: Sources, color: bool) -> List[str]:
    """Ruff-style diff: `old new |` gutter, `-` removed, `+` added, ` ` context.

    In a notebook, the edits of each cell are shown under a `cell N` line."""
    edits = edits_of(finding)
    cells = sorted({cell_of(edit) for edit in edits}, key=lambda c: c or 0)
    if cells == [None] or not edits:
        return _diff_block(diff_rows(finding, sources), color)
    out: List[str] = []
    for cell in cells:
        mine = [edit for edit in edits if cell_of(edit) == cell]
        block = _diff_block(diff_rows(finding, sources, mine, sources.lines(source_key(finding, cell)) or []), color)
        if block:
            out.append(style(f"cell {cell}", BOLD, color))
            out.extend(block)
    return out


def _diff_block(rows: List[_Row], color: bool) -> List[str]:
    numbers = [n for row in rows if row is not None for n in row[:2] if n is not None]
    if not numbers:
        return []
    width = max(len(str(n)) for n in numbers)
    out = []
    for row in rows:
        if row is None:
            out.append(" " * (2 * width + 1) + " ...")
            continue
        old, new, sign, content = row
        gutter = f"{'' if old is None else old:>{width}} {'' if new is None else new:>{width}} |"
        line = f"{gutter}{sign}{_display(content)}" if content else f"{gutter}{sign}".rstrip()
        if sign == "-":
            line = style(line, RED, color)
        elif sign == "+":
            line = style(line, GREEN, color)
        out.append(line)
    return out


def statistics(findings: Sequence[Any], *, color: bool = False, unsafe_fixes: bool = False) -> str:
    """`ruff --statistics`: count, code, `[*]`/`[ ]` fixability (when any code is fixable), summary.

    With `unsafe_fixes`, a code whose findings have unsafe fixes counts as fixable.

    One line per code, by count descending, then code.
    """
    counts: dict = {}
    fixable: dict = {}
    for finding in findings:
        counts[finding.code] = counts.get(finding.code, 0) + 1
        fixable[finding.code] = fixable.get(finding.code, False) or offered(finding, unsafe_fixes)
    if not counts:
        return ""
    order = sorted(counts, key=lambda code: (-counts[code], code))
    count_width = max(len(str(n)) for n in counts.values())
    code_width = max(len(code) for code in counts)
    any_fixable = any(fixable.values())
    out = []
    for code in order:
        mark = ""
        if any_fixable:
            mark = f"[{style('*', CYAN, color)}] " if fixable[code] else "[ ] "
        count = style(f"{counts[code]:>{count_width}}", BOLD, color)
        name = style(f"{code:<{code_width}}", RED_BOLD, color)
        out.append(f"{count}\t{name}\t{mark}{rule_summary(code)}".rstrip() + "\n")
    return "".join(out)
