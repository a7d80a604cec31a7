"""Findings, fixes and suppression comments.

A rule reports a `Finding`; where it can rewrite the code it attaches a `Fix`:
whole-line text edits of the file it was found in (a rule builds the rewrite
on libcst's tree, `gradfix.fixes.rewrite.Rewrite`, and keeps only its edits),
so findings hold no libcst node: they pickle, cache and serialise as they
are, and the engine applies several findings' fixes by text
(`gradfix.fixes.apply`).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Optional, Tuple


@dataclass(frozen=True)
class TextEdit:
    """Whole-line replacement: lines [start_line, end_line) become `content` (1-based)."""

    start_line: int
    end_line: int
    content: str


@dataclass(frozen=True)
class Fix:
    """The rewrite of one finding, as text edits of the file it was found in.

    `safe` is True only when the rewrite is proven exact; otherwise
    `unsafe_reason` names the unproven condition.
    """

    safe: bool
    description: str
    unsafe_reason: str = ""
    edits: Tuple[TextEdit, ...] = ()
    # (line, column) of the code the fix changes first, where that is above
    # the finding (GF004 reports the second evaluation and hoists the first).
    # Overlapping fixes are applied one per pass in this order, so the names
    # they introduce (`kl_shared`, `kl_shared_2`) follow the code.
    first: Optional[Tuple[int, int]] = None
    # Where the statements the fix replaces start (line, column): a rule's
    # finding gives way to a stronger rule's whose fix replaces one of them
    # (SUPERSEDED_BY).
    statements: FrozenSet[Tuple[int, int]] = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int  # 1-based
    col: int  # 1-based
    code: str
    message: str
    fix: Optional[Fix] = field(default=None, compare=False)
    end_line: int = 0
    end_col: int = 0

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.safe

    @property
    def edits(self) -> Tuple[TextEdit, ...]:
        """The fix's text edits (none without a fix)."""
        return self.fix.edits if self.fix is not None else ()

    def sort_key(self) -> Tuple[str, int, int, str]:
        return (self.path, self.line, self.col, self.code)


NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE
)

# `# gradfix: noqa` (all rules) or `# gradfix: noqa: GF001, ...` anywhere in a
# file, as a comment of its own, suppresses those rules in the whole file.
_FILE_NOQA = re.compile(
    r"#\s*gradfix:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE
)

# Per line: None means a blanket `# noqa`, otherwise the set of codes.
# Line 0 holds the file-level suppression.
NoqaMap = Dict[int, Optional[FrozenSet[str]]]
FILE_LEVEL = 0


def _merge(result: NoqaMap, line: int, codes: Optional[str]) -> None:
    if codes is None:
        result[line] = None
        return
    previous = result.get(line, frozenset())
    if previous is None:
        return
    result[line] = previous | frozenset(c.strip().upper() for c in codes.split(","))


def noqa_map(source: str) -> NoqaMap:
    """Map line numbers to the codes a `# noqa` comment on that line suppresses.

    Comments are found with the tokenizer so that `# noqa` inside a string is
    not mistaken for a suppression.
    """
    result: NoqaMap = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return result
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        whole = _FILE_NOQA.match(tok.string)
        if whole and tok.line.strip() == tok.string.strip():
            _merge(result, FILE_LEVEL, whole.group("codes"))
            continue
        match = NOQA.search(tok.string)
        if match:
            _merge(result, tok.start[0], match.group("codes"))
    return result


def is_suppressed(finding: Finding, noqa: NoqaMap) -> bool:
    for line in (FILE_LEVEL, finding.line):
        if line in noqa:
            codes = noqa[line]
            if codes is None or finding.code in codes:
                return True
    return False
