"""The machine-readable renderers: json (ruff's layout), sarif (2.1.0) and github (workflow commands)."""

from __future__ import annotations

import inspect
import json
import os
import re
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple
from urllib.parse import quote

from gradfix.output._common import cell_of, edits_of, end_of, has_end, rule_module

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
INFORMATION_URI = "https://pypi.org/project/gradfix/"
LEVEL = "warning"
# Where the rules are documented: the README's rule sections on the repository (the same URL as
# pyproject.toml's `Repository`, which tests/test_packaging.py keeps equal). One place to change.
REPOSITORY_URL = "https://github.com/gradfix/gradfix"
RULE_DOCS_URL = REPOSITORY_URL + "/blob/main/README.md"
# `--github-level`: the workflow command of a finding's annotation (ruff writes `::error`).
GITHUB_LEVELS = ("error", "warning", "notice")
DEFAULT_GITHUB_LEVEL = "error"


def rule_help_uri(code: str, name: str) -> str:
    """The README section of a rule: GitHub's anchor of the heading `### `GF001` detached-double-backward`."""
    return f"{RULE_DOCS_URL}#{code.lower()}-{name}"


# -- files that could not be checked ---------------------------------------------

_POSITION = re.compile(r"^(?:cell (?P<cell>\d+):)?(?P<row>\d+):(?P<column>\d+): (?P<message>.*)$", re.S)


class FileError(NamedTuple):
    """A file that could not be checked: its path, the message, and the position where there is one."""

    path: str
    message: str
    row: Optional[int] = None
    column: Optional[int] = None
    cell: Optional[int] = None


def file_errors(errors: Sequence[Tuple[str, str]]) -> List[FileError]:
    """(path, message) pairs as the CLI prints them (`LINE:COL: text` or `cell N:LINE:COL: text` where the
    position is known) split into FileError records."""
    out = []
    for path, message in errors:
        match = _POSITION.match(message)
        if match:
            cell = int(match["cell"]) if match["cell"] else None
            out.append(FileError(path, match["message"], int(match["row"]), int(match["column"]), cell))
        else:
            out.append(FileError(path, message))
    return out


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


# -- json ------------------------------------------------------------------------


def json_edit(edit: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "content": edit.content,
        "location": {"row": int(edit.start_line), "column": 1},
        "end_location": {"row": int(edit.end_line), "column": 1},
    }
    if cell_of(edit) is not None:
        out["cell"] = cell_of(edit)  # a notebook: rows count from this cell's first line
    return out


def json_fix(finding: Any) -> Optional[Dict[str, Any]]:
    fix = finding.fix
    if fix is None:
        return None
    return {
        "applicability": "safe" if fix.safe else "unsafe",
        "message": fix.description,
        "unsafe_reason": None if fix.safe or not fix.unsafe_reason else fix.unsafe_reason,
        "edits": [json_edit(edit) for edit in edits_of(finding)],
    }


def json_finding(finding: Any) -> Dict[str, Any]:
    end_line, end_col = end_of(finding)
    out = {
        "code": finding.code,
        "message": finding.message,
        "filename": finding.path,
        "location": {"row": finding.line, "column": finding.col},
        "end_location": {"row": end_line, "column": end_col},
        "fix": json_fix(finding),
        "noqa_row": finding.line,
    }
    if cell_of(finding) is not None:
        # A notebook (ruff's field): rows count from the first line of this cell (1-based, all cells counted);
        # `end_location` is in `end_cell` where the span runs into a later cell.
        out["cell"] = cell_of(finding)
        end_cell = getattr(finding, "end_cell", 0) or cell_of(finding)
        if end_cell != cell_of(finding):
            out["end_cell"] = end_cell
    return out


def json_error(error: FileError) -> Dict[str, Any]:
    """A file that could not be checked, in the shape of a finding with `"code": null` (as ruff writes syntax
    errors): the message, the file, the position where known (else `null`), no fix."""
    where = {"row": error.row, "column": error.column} if error.row is not None else None
    out: Dict[str, Any] = {
        "code": None,
        "message": error.message,
        "filename": error.path,
        "location": where,
        "end_location": where,
        "fix": None,
        "noqa_row": None,
    }
    if error.cell is not None:
        out["cell"] = error.cell
    return out


def render_json(findings: Sequence[Any], errors: Sequence[FileError] = ()) -> str:
    items = [json_finding(f) for f in findings]
    if errors:
        items += [json_error(e) for e in errors]

        def key(item: Dict[str, Any]):
            where = item["location"] or {"row": 0, "column": 0}
            return (item["filename"], item.get("cell") or 0, where["row"], where["column"])

        items.sort(key=key)  # stable: findings keep their order, errors go in by path and position
    return _dump(items)


# -- sarif -----------------------------------------------------------------------


def artifact_uri(path: str) -> str:
    """A relative POSIX URI reference for a relative path; a file:// URI for an absolute one."""
    posix = path.replace(os.sep, "/") if os.sep != "/" else path
    if os.path.isabs(path):
        try:
            from pathlib import Path

            return Path(path).as_uri()
        except ValueError:  # pragma: no cover - isabs and as_uri disagree only on odd paths
            pass
    return quote(posix, safe="/!$&'()*+,;=@-._~")


def sarif_rule(code: str) -> Dict[str, Any]:
    rule = rule_module(code)
    descriptor: Dict[str, Any] = {"id": code}
    if rule is not None:
        doc = inspect.getdoc(rule) or getattr(rule, "SUMMARY", "")
        descriptor["name"] = getattr(rule, "NAME", code)
        descriptor["shortDescription"] = {"text": getattr(rule, "SUMMARY", "")}
        descriptor["fullDescription"] = {"text": doc}
        descriptor["help"] = {"text": doc}
        descriptor["helpUri"] = rule_help_uri(code, descriptor["name"])
    descriptor["defaultConfiguration"] = {"level": LEVEL}
    return descriptor


def sarif_region(start_line: int, start_col: int, end_line: Optional[int], end_col: Optional[int]) -> Dict[str, int]:
    region = {"startLine": start_line, "startColumn": start_col}
    if end_line is not None:
        region["endLine"] = end_line
        region["endColumn"] = end_col if end_col is not None else 1
    return region


def sarif_replacement(edit: Any) -> Dict[str, Any]:
    """SARIF regions are inclusive of their start and exclusive of (line e, column 1)."""
    start, end = int(edit.start_line), int(edit.end_line)
    end = max(end, start)
    out: Dict[str, Any] = {
        "deletedRegion": {"startLine": start, "startColumn": 1, "endLine": end, "endColumn": 1},
        "insertedContent": {"text": edit.content},
    }
    if cell_of(edit) is not None:
        out["properties"] = {"cell": cell_of(edit)}
    return out


def _fix_properties(fix: Any) -> Dict[str, Any]:
    properties: Dict[str, Any] = {"fixApplicability": "safe" if fix.safe else "unsafe"}
    if not fix.safe and fix.unsafe_reason:
        properties["unsafeReason"] = fix.unsafe_reason
    return properties


def sarif_result(finding: Any, rule_index: int, unsafe_fixes: bool = False) -> Dict[str, Any]:
    """One SARIF result; `unsafe_fixes`: offer unsafe fixes too (marked unsafe, with their reason)."""
    uri = artifact_uri(finding.path)
    same_cell = (getattr(finding, "end_cell", 0) or cell_of(finding)) == cell_of(finding)
    end = end_of(finding) if has_end(finding) and same_cell else (None, None)
    result: Dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": LEVEL,
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri},
                    "region": sarif_region(finding.line, finding.col, *end),
                }
            }
        ],
    }
    fix = finding.fix
    if cell_of(finding) is not None:
        # A notebook: the region's lines count from the first line of this cell.
        result["properties"] = {"cell": cell_of(finding)}
    if fix is None:
        return result
    result["properties"] = {**result.get("properties", {}), **_fix_properties(fix)}
    edits = edits_of(finding)
    if (fix.safe or unsafe_fixes) and edits:
        description = fix.description
        if not fix.safe:
            description = f"unsafe fix: {description}"
            if fix.unsafe_reason:
                description += f" (unsafe because {fix.unsafe_reason})"
        result["fixes"] = [
            {
                "description": {"text": description},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": uri},
                        "replacements": [sarif_replacement(edit) for edit in edits],
                    }
                ],
            }
        ]
        if not fix.safe:
            result["fixes"][0]["properties"] = _fix_properties(fix)
    return result


def sarif_notification(error: FileError) -> Dict[str, Any]:
    """A file that could not be checked, as a SARIF tool execution notification."""
    physical: Dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(error.path)}}
    if error.row is not None:
        physical["region"] = sarif_region(error.row, error.column or 1, None, None)
    notification: Dict[str, Any] = {
        "level": "error",
        "message": {"text": f"{error.path}: {error.message}"},
        "locations": [{"physicalLocation": physical}],
    }
    if error.cell is not None:
        notification["properties"] = {"cell": error.cell}
    return notification


def sarif_invocation(errors: Sequence[FileError]) -> Dict[str, Any]:
    invocation: Dict[str, Any] = {"executionSuccessful": not errors}
    if errors:
        invocation["toolExecutionNotifications"] = [sarif_notification(e) for e in errors]
    return invocation


def sarif_log(findings: Sequence[Any], version: str, unsafe_fixes: bool = False,
              errors: Sequence[FileError] = ()) -> Dict[str, Any]:
    codes = sorted({f.code for f in findings})
    index = {code: i for i, code in enumerate(codes)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gradfix",
                        "informationUri": INFORMATION_URI,
                        "version": version,
                        "rules": [sarif_rule(code) for code in codes],
                    }
                },
                # libcst columns count code points.
                "columnKind": "unicodeCodePoints",
                # Files that could not be checked: one notification each, and the run is then not successful.
                "invocations": [sarif_invocation(errors)],
                "results": [sarif_result(f, index[f.code], unsafe_fixes) for f in findings],
            }
        ],
    }


def render_sarif(findings: Sequence[Any], version: str, *, unsafe_fixes: bool = False,
                 errors: Sequence[FileError] = ()) -> str:
    return _dump(sarif_log(findings, version, unsafe_fixes, errors))


# -- github ----------------------------------------------------------------------


def escape_data(text: str) -> str:
    """GitHub's workflow-command escaping of a message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """GitHub's workflow-command escaping of a property value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(finding: Any, level: str = DEFAULT_GITHUB_LEVEL) -> str:
    props = [
        ("title", f"gradfix ({finding.code})"),
        ("file", finding.path),
        ("line", str(finding.line)),
        ("col", str(finding.col)),
    ]
    if has_end(finding):
        end_line, end_col = end_of(finding)
        props += [("endLine", str(end_line)), ("endColumn", str(end_col))]
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    cell = cell_of(finding)
    where = f"cell {cell}:{finding.line}:{finding.col}: " if cell is not None else ""
    return f"::{level} {rendered}::{escape_data(f'{where}{finding.code} {finding.message}')}\n"


def github_error_line(error: FileError) -> str:
    """A file that could not be checked: always an `::error` annotation."""
    props = [("title", "gradfix"), ("file", error.path)]
    if error.row is not None:
        props += [("line", str(error.row)), ("col", str(error.column or 1))]
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    where = f"cell {error.cell}:{error.row}:{error.column}: " if error.cell is not None else ""
    return f"::error {rendered}::{escape_data(where + error.message)}\n"


def render_github(findings: Sequence[Any], errors: Sequence[FileError] = (), level: str = DEFAULT_GITHUB_LEVEL) -> str:
    if level not in GITHUB_LEVELS:
        raise ValueError(f"unknown GitHub annotation level `{level}`; expected one of: {', '.join(GITHUB_LEVELS)}")
    return "".join(github_error_line(e) for e in errors) + "".join(github_line(f, level) for f in findings)


__all__: List[str] = [
    "render_json",
    "render_sarif",
    "render_github",
    "escape_data",
    "escape_property",
    "sarif_log",
    "FileError",
    "file_errors",
    "GITHUB_LEVELS",
    "DEFAULT_GITHUB_LEVEL",
    "REPOSITORY_URL",
    "rule_help_uri",
]
