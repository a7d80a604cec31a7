"""Helpers shared by the renderers: finding fields, edits, source lines, ANSI styles."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

_NEWLINE = re.compile(r"\r\n|\r|\n")

# ANSI styles, applied only when colour is asked for (as ruff's `colored` crate writes them).
BOLD = "1"
RED_BOLD = "1;31"
CYAN = "36"
GREEN = "32"
RED = "31"
BLUE_BOLD = "1;34"


def style(text: str, code: str, color: bool) -> str:
    if not color or not text:
        return text
    return f"\x1b[{code}m{text}\x1b[0m"


def edits_of(finding: Any) -> List[Any]:
    """The finding's text edits, ordered by position (duck-typed: start_line, end_line, content)."""
    edits = getattr(finding, "edits", None) or ()
    return sorted(edits, key=lambda e: (e.start_line, e.end_line))


def end_of(finding: Any) -> Tuple[int, int]:
    """(end_line, end_col) of the reported span; the start when the finding has no end."""
    end_line = getattr(finding, "end_line", 0) or 0
    end_col = getattr(finding, "end_col", 0) or 0
    if end_line <= 0:
        return finding.line, finding.col
    return end_line, max(end_col, 1)


def cell_of(item: Any) -> Optional[int]:
    """The notebook cell (1-based) of a finding or edit; None outside notebooks."""
    cell = getattr(item, "cell", None)
    return cell if isinstance(cell, int) and cell > 0 else None


def location(finding: Any) -> str:
    """`path:line:col`, or `path:cell N:line:col` in a notebook (ruff's form)."""
    cell = cell_of(finding)
    where = f"{finding.path}:cell {cell}" if cell is not None else finding.path
    return f"{where}:{finding.line}:{finding.col}"


def source_key(finding: Any, cell: Optional[int] = None) -> str:
    """The key of a finding's source text in `Sources`: its path, or `path:cell N` for a notebook cell."""
    cell = cell if cell is not None else cell_of(finding)
    return f"{finding.path}:cell {cell}" if cell is not None else finding.path


def has_end(finding: Any) -> bool:
    return (getattr(finding, "end_line", 0) or 0) > 0


def split_lines(text: str) -> List[str]:
    """Lines as the tokenizer numbers them (\\r\\n, \\r or \\n), without their endings."""
    if not text:
        return []
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class Sources:
    """Per-path source lines, split once; missing paths give None."""

    def __init__(self, sources: Optional[Mapping[str, str]]) -> None:
        self._sources = sources or {}
        self._cache: Dict[str, Optional[List[str]]] = {}

    def lines(self, path: str) -> Optional[List[str]]:
        if path not in self._cache:
            text = self._sources.get(path)
            self._cache[path] = split_lines(text) if isinstance(text, str) else None
        return self._cache[path]

    def line(self, path: str, number: int) -> Optional[str]:
        lines = self.lines(path)
        if lines is None or not 1 <= number <= len(lines):
            return None
        return lines[number - 1]


def rule_module(code: str) -> Any:
    """The rule module for `code`, or None (the registry is imported only when needed)."""
    try:
        from gradfix.rules import by_code
    except ImportError:  # pragma: no cover - the registry is part of the package
        return None
    return by_code(code)


def rule_summary(code: str) -> str:
    rule = rule_module(code)
    return getattr(rule, "SUMMARY", "") if rule is not None else ""
