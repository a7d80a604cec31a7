"""Why a fix is not proven safe: `Reason` values, collected per finding in a `Reasons`.

A rule gathers the unproven conditions of one fix in one `Reasons` (the analyses in
`gradfix.analysis` return `Reason` values, or plain text for conditions nothing refers to
again); an empty collection is a safe fix. A condition that a later proof discharges is
removed by what it is about (`discard(kind, subject)`), never by matching its text. The
rendered message lists the texts in the order they were found, each once: every analysis walks
the code in source order, so the order does not depend on hashing (tests/test_determinism.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, List, Union

# Kinds a rule refers to again. Any other unproven condition is UNPROVEN.
UNPROVEN = "unproven"
# A coefficient symbol not proven to be a number (subject: the symbol's source text). GF004
# discards it where the one evaluation reads the symbol's own binding instead.
COEFFICIENT = "coefficient"
# The shared analyses' kinds (`gradfix.analysis`): a later backward through a graph the fix frees;
# a graph the next iteration of a loop may need; a gradient hook or a custom autograd Function
# of the file (run once per pass); a backward spelling whose code the file defines; a read of
# names by their strings (`locals()`); a loss written inline; calls or in-place updates between
# the backward calls.
LATER_BACKWARD = "later-backward"
LOOP = "loop"
HOOK = "hook"
CUSTOM_FUNCTION = "custom-function"
SPELLING = "spelling"
INTROSPECTION = "introspection"
INLINE_LOSS = "inline-loss"
BETWEEN = "between"


@dataclass(frozen=True)
class Reason:
    """One unproven condition: its text (what the user reads), what kind of condition it is, and
    what it is about (a name or symbol, where one is)."""

    text: str
    kind: str = UNPROVEN
    subject: str = ""

    def __str__(self) -> str:
        return self.text


class Reasons:
    """The unproven conditions of one fix, in the order found, each once."""

    def __init__(self, reasons: Iterable[Union[Reason, str]] = ()) -> None:
        self._items: List[Reason] = []
        self.extend(reasons)

    def add(self, reason: Union[Reason, str]) -> None:
        item = reason if isinstance(reason, Reason) else Reason(reason)
        if all(item.text != known.text for known in self._items):
            self._items.append(item)

    def extend(self, reasons: Iterable[Union[Reason, str]]) -> None:
        for reason in reasons:
            self.add(reason)

    def discard(self, kind: str, subject: str) -> None:
        """Remove the conditions of this kind about this subject (a later proof discharged them)."""
        self._items = [r for r in self._items if not (r.kind == kind and r.subject == subject)]

    def text(self) -> str:
        """The message's form: the texts joined by `; ` (empty for a safe fix)."""
        return "; ".join(r.text for r in self._items)

    def __iter__(self) -> Iterator[Reason]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __repr__(self) -> str:
        return f"Reasons({[r.text for r in self._items]!r})"
