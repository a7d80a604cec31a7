"""Renderers for `gradfix check --output-format`, after ruff's conventions.

    render(findings, fmt, sources=..., show_fixes=..., color=..., version=...) -> str

- concise: `path:line:col: CODE [*] message`, one per finding (`[*]`: a safe
  fix exists); with `show_fixes`, each fix's help line and diff follow it.
- full: the concise line, the source excerpt with a caret under the span, the
  fix's `help:` line and its proposed diff (ruff style: `old new |-/+`).
- json: ruff's JSON layout (array of findings with fix edits), indent 2.
- sarif: a SARIF 2.1.0 log; only safe fixes carry SARIF `fixes`.
- github: GitHub Actions `::warning ...::` workflow commands.

`statistics(findings)` is `--statistics`. Findings are expected sorted; a
finding's edits are read duck-typed from `getattr(finding, "edits", ())`
(objects with start_line, end_line, content). Every non-empty output ends
with a newline.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import gradfix
from gradfix.output._common import Sources
from gradfix.output.machine import render_github, render_json, render_sarif
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
) -> str:
    """Render `findings` in output format `fmt` (one of FORMATS)."""
    findings = list(findings)
    if fmt == "concise":
        return render_concise(findings, Sources(sources), show_fixes=show_fixes, color=color)
    if fmt == "full":
        return render_full(findings, Sources(sources), color=color)
    if fmt == "json":
        return render_json(findings)
    if fmt == "sarif":
        return render_sarif(findings, version)
    if fmt == "github":
        return render_github(findings)
    raise ValueError(f"unknown output format `{fmt}`; expected one of: {', '.join(FORMATS)}")


__all__ = ["FORMATS", "render", "statistics"]
