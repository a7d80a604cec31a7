"""Renderers for `gradfix check --output-format`, after ruff's conventions.

    render(findings, fmt, sources=..., show_fixes=..., color=..., version=..., unsafe_fixes=...) -> str

Applicability is a property of the fix, never of the flags: an unsafe fix is
`"unsafe"` with its reason in every format. `unsafe_fixes` (the run's
`--unsafe-fixes`) only says whether unsafe fixes are *offered*: the `[*]`
mark in text formats, and SARIF `fixes` entries (marked unsafe).

A finding in a notebook (`gradfix.notebook.CellFinding`) has a `cell` (1-based,
all cells counted): its rows count from that cell's first line, text formats
print `path:cell N:line:col:` (ruff's form), JSON adds `"cell"` to the finding
and to each edit, SARIF a `cell` property, github the cell in the message.

- concise: `path:line:col: CODE [*] message`, one per finding (`[*]`: a safe
  fix exists, or any fix with `unsafe_fixes`); with `show_fixes`, each fix's
  help line (`unsafe fix:` and the reason for an unsafe one) and diff follow it.
- full: the concise line, the source excerpt with a caret under the span, the
  fix's `help:` line and its proposed diff (ruff style: `old new |-/+`).
- json: ruff's JSON layout (array of findings with fix edits), indent 2.
- sarif: a SARIF 2.1.0 log; a result with a fix has `properties`
  `fixApplicability` ("safe"/"unsafe") and, when unsafe, `unsafeReason`; safe
  fixes carry SARIF `fixes`, unsafe ones only with `unsafe_fixes` (their
  description then starts with `unsafe fix:` and the fix's own `properties`
  repeat the applicability and reason).
- github: GitHub Actions workflow commands, `::error ...::` by default (as ruff; `github_level`
  picks `warning` or `notice`).

`errors` are the files that could not be checked, as (path, message) pairs
(`LINE:COL: text` where the position is known). JSON lists each as an entry
shaped like a finding with `"code": null` (ruff's form for syntax errors),
SARIF as `invocations[0].toolExecutionNotifications` with
`executionSuccessful: false`, github as `::error` annotations; the text
formats leave them to the caller (stderr).

`statistics(findings, unsafe_fixes=...)` is `--statistics`. Findings are expected sorted; a
finding's edits are read duck-typed from `getattr(finding, "edits", ())`
(objects with start_line, end_line, content). Every non-empty output ends
with a newline.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Tuple

import gradfix
from gradfix.output._common import Sources, location
from gradfix.output.machine import (
    DEFAULT_GITHUB_LEVEL,
    GITHUB_LEVELS,
    file_errors,
    render_github,
    render_json,
    render_sarif,
)
from gradfix.output.text import render_concise, render_full, statistics

FORMATS = ("concise", "full", "json", "sarif", "github")


def render(
    findings: Sequence[Any],
    fmt: str,
    *,
    sources: Optional[Mapping[str, str]] = None,
    show_fixes: bool = False,
    color: bool = False,
    version: str = gradfix.__version__,
    unsafe_fixes: bool = False,
    errors: Sequence[Tuple[str, str]] = (),
    github_level: str = DEFAULT_GITHUB_LEVEL,
) -> str:
    """Render `findings` in output format `fmt` (one of FORMATS); `unsafe_fixes`: unsafe fixes are offered too;
    `errors`: (path, message) of the files that could not be checked (machine formats only)."""
    findings = list(findings)
    problems = file_errors(errors)
    if fmt == "concise":
        return render_concise(findings, Sources(sources), show_fixes=show_fixes, color=color, unsafe_fixes=unsafe_fixes)
    if fmt == "full":
        return render_full(findings, Sources(sources), color=color, unsafe_fixes=unsafe_fixes)
    if fmt == "json":
        return render_json(findings, problems)
    if fmt == "sarif":
        return render_sarif(findings, version, unsafe_fixes=unsafe_fixes, errors=problems)
    if fmt == "github":
        return render_github(findings, problems, github_level)
    raise ValueError(f"unknown output format `{fmt}`; expected one of: {', '.join(FORMATS)}")


__all__ = ["FORMATS", "GITHUB_LEVELS", "location", "render", "statistics"]
