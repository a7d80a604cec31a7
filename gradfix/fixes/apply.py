"""Applying the fixes of several findings to a file's text, by their edits.

A fix is whole-line text edits of the text it was found in (`gradfix.fixes.rewrite`). The fixes
of one pass are taken in order (`Fix.first`, else the finding's position); one whose edits
overlap an edit already taken waits for the next pass, where the file is parsed and linted
again. Two fixes may share an edit (the same import line): it is made once. Edits that only
touch (one ends where the other starts, or inserts there) are made together.
"""

from __future__ import annotations

from typing import Iterable, List, Tuple

from gradfix.files import lines_with_ends
from gradfix.findings import Finding, TextEdit


def apply_fixes(text: str, findings: Iterable[Finding]) -> Tuple[str, List[Finding]]:
    """Apply the fixes whose edits do not overlap an earlier one's; return (new text, the findings applied)."""
    taken: List[TextEdit] = []
    applied: List[Finding] = []
    for finding in sorted(findings, key=lambda f: f.fix.first or (f.line, f.col)):  # type: ignore[union-attr]
        edits = finding.fix.edits  # type: ignore[union-attr]
        if not edits:
            continue
        fresh = [e for e in edits if e not in taken]
        if any(_overlap(e, other) for e in fresh for other in taken):
            continue  # left for the next pass
        taken.extend(fresh)
        applied.append(finding)
    if not applied:
        return text, []
    lines = lines_with_ends(text)
    # Edits are made against the text ending in a newline (`rewrite.Layout.lines`); a file
    # without one gets none back, as libcst writes such a module.
    bare = bool(lines) and not lines[-1].endswith(("\n", "\r"))
    if bare:
        lines[-1] += newline_of(text)
    # Bottom-up, so earlier line numbers stay valid; at one line, an insertion goes before the
    # edit that starts there (it was found before that statement).
    for edit in sorted(taken, key=lambda e: (e.start_line, e.end_line), reverse=True):
        lines[edit.start_line - 1 : edit.end_line - 1] = [edit.content] if edit.content else []
    new = "".join(lines)
    if bare and new.endswith(("\n", "\r")):
        new = new[:-2] if new.endswith("\r\n") else new[:-1]
    return new, applied


def newline_of(text: str) -> str:
    """The file's first line ending (as libcst infers its default), "\n" when it has none."""
    lines = lines_with_ends(text)
    for line in lines:
        for ending in ("\r\n", "\n", "\r"):
            if line.endswith(ending):
                return ending
    return "\n"


def _overlap(a: TextEdit, b: TextEdit) -> bool:
    if a.start_line == a.end_line == b.start_line == b.end_line:
        return True  # two different insertions at one place: their order is not known
    return a.start_line < b.end_line and b.start_line < a.end_line
