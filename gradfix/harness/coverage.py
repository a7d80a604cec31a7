"""Which of the rewrite's lines ran: an OK from `gradfix verify` must rest on the rewritten code
having run.

Verify compares what the snippet leaves behind. Where the rewritten statements never run (they
sit under an `if __name__ == "__main__":` block, which verify does not run, in a function nobody
calls, or behind a branch the seed does not take), both versions leave the same state and the
comparison says OK about code it never exercised: a review met exactly that (stop 24). So the
compared runs record the lines of the snippet's file that run (`lines_run`, a trace function on
the snippet's own frames only), and every changed hunk of the rewrite (`changed_hunks`) must have
run in at least one line of the statements it touches (`unrun`).
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import sys
import threading
from typing import Iterator, List, Set, Tuple

Span = Tuple[int, int]  # first and last line, 1-based, inclusive


@contextlib.contextmanager
def lines_run(filename: str, into: Set[int]) -> Iterator[None]:
    """Add to `into` the line of every event in frames whose code comes from `filename`, in this
    thread and in threads started meanwhile. Other frames are not traced (their `call` event is
    declined at once), so library code runs at nearly full speed."""

    def local(frame, event, arg):
        if event == "line":
            into.add(frame.f_lineno)
        return local

    def calls(frame, event, arg):
        if frame.f_code.co_filename != filename:
            return None
        into.add(frame.f_lineno)
        return local

    previous = sys.gettrace()
    gettrace = getattr(threading, "gettrace", None)  # Python 3.10+
    previous_threads = gettrace() if gettrace is not None else None
    sys.settrace(calls)
    threading.settrace(calls)
    try:
        yield
    finally:
        sys.settrace(previous)
        threading.settrace(previous_threads)  # type: ignore[arg-type]


def changed_hunks(original: str, rewritten: str) -> List[Span]:
    """The line ranges of `rewritten` that replace or add lines of `original`, blank and
    comment-only lines left out (a hunk that only deletes lines has none)."""
    before, after = original.splitlines(), rewritten.splitlines()
    hunks: List[Span] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag not in ("replace", "insert"):
            continue
        lines = [j + 1 for j in range(j1, j2) if after[j].strip() and not after[j].lstrip().startswith("#")]
        if lines:
            hunks.append((lines[0], lines[-1]))
    return hunks


def unrun(rewritten: str, hunks: List[Span], ran: Set[int]) -> List[Span]:
    """The hunks none of whose statements ran: a line of a hunk stands for the innermost statement
    holding it (all of a simple statement's lines; a compound statement's header lines only), and a
    hunk ran when some line of those statements ran."""
    try:
        tree = ast.parse(rewritten)
    except SyntaxError:  # the rewrite compiled, or verify would have reported it: defensive
        return []
    spans: List[Span] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        end = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            end = max(node.lineno, body[0].lineno - 1)  # the header of a compound statement
        spans.append((node.lineno, end))
    missed: List[Span] = []
    for first, last in hunks:
        statements = set()
        for line in range(first, last + 1):
            holding = [s for s in spans if s[0] <= line <= s[1]]
            if holding:
                statements.add(min(holding, key=lambda s: s[1] - s[0]))
        covered = statements or {(first, last)}
        if not any(start <= line <= end for start, end in covered for line in ran):
            missed.append((first, last))
    return missed
