"""Lint a snippet, apply its safe fixes, execute original and rewrite, and say how it went."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

FILENAME = "train.py"


@dataclass
class Outcome:
    """`kind`: 'no_fix' (no safe fix applied), 'bad_original' (the original raised or had nothing
    to compare: the generator's fault), 'ok' (a safe fix ran and matched), or 'mismatch'
    (a safe fix changed values or gradients, or raised where the original did not)."""

    kind: str
    fixed: Optional[str] = None
    detail: str = ""
    bad_keys: List[str] = field(default_factory=list)
    messages: List[str] = field(default_factory=list)


MAIN_GUARD = 'if __name__ == "__main__":'


def _opened(source: str) -> str:
    return source.replace(MAIN_GUARD, "if True:")


def run(source: str, codes: Sequence[str]) -> Outcome:
    from gradfix.harness import verify_pair

    try:
        # A snippet that is not valid Python is the generator's fault (`x.view(-1, 3) += 0.25`):
        # gradfix rightly reports a syntax error there, which is not a mismatch.
        compile(source, FILENAME, "exec", dont_inherit=True)
    except SyntaxError as e:
        return Outcome("bad_original", detail=f"not valid Python: {e.msg} (line {e.lineno})")
    try:
        result = lint_bytes(source.encode(), FILENAME, LintOptions(codes, fix=True, unsafe_fixes=False))
    except Exception as e:  # gradfix itself must never raise on valid Python
        return Outcome("mismatch", detail=f"gradfix raised {type(e).__name__}: {str(e)[:300]}")
    if result.error is not None:
        return Outcome("mismatch", detail=f"gradfix error: {result.error}")
    messages = [f"{f.line}:{f.col} {f.code} {'[safe] ' if f.fixable else ''}{f.message}" for f in result.findings]
    if result.fixed is None:
        return Outcome("no_fix", messages=messages)
    fixed = result.fixed.decode()
    # The harness runs a snippet as an imported module: script code under a main guard runs only
    # with the guard opened, in both versions alike.
    report = verify_pair(_opened(source), _opened(fixed), filename=FILENAME, device="cpu", repeat=0)
    if report.error is not None and report.error_side != "rewritten" and not (
        report.error_side is None and "nothing to compare" in report.error
    ):
        if report.error_side == "original":
            return Outcome("bad_original", fixed, f"original raised: {report.error}", messages=messages)
        return Outcome("mismatch", fixed, f"protocol: {report.error}", messages=messages)
    if report.error is not None:
        if report.error_side == "rewritten":
            return Outcome("mismatch", fixed, f"the rewrite raised (line {report.error_line}): {report.error}", messages=messages)
        return Outcome("bad_original", fixed, report.error, messages=messages)
    bad = [r for r in report.rows if not r.ok]
    if bad:
        detail = "\n".join(f"{r.key}: max abs {r.max_abs} max rel {r.max_rel} {r.note or ''}" for r in bad)
        return Outcome("mismatch", fixed, detail, [r.key for r in bad], messages)
    return Outcome("ok", fixed, messages=messages)


def explain(source: str, codes: Sequence[str], outcome: Outcome, describe: str = "") -> str:
    numbered = "\n".join(f"{i:3}| {line}" for i, line in enumerate(source.splitlines(), 1))
    parts = [f"codes: {','.join(codes)}", describe, numbered, "findings:", *outcome.messages, outcome.detail]
    if outcome.fixed is not None:
        parts += ["rewrite:", outcome.fixed]
    return "\n".join(p for p in parts if p)
