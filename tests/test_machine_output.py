"""Machine output names the files that could not be checked; SARIF rules link their docs; GitHub levels.

JSON stays a list in ruff's layout: a file that could not be checked is an
entry shaped like a finding with `"code": null` (ruff writes syntax errors so).
SARIF lists such files as `invocations[0].toolExecutionNotifications` with
`executionSuccessful: false`.  Driven through the CLI on real files.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from gradfix.cli import main
from gradfix.output import render
from gradfix.output.machine import REPOSITORY_URL, rule_help_uri
from gradfix.rules import ALL_RULES
from tests.test_bad_input import SYNTAX_ERROR
from tests.test_cli import SEED
from tests.test_output import validate_sarif


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def tree(tmp_path):
    (tmp_path / "a_bad.py").write_bytes(SYNTAX_ERROR)
    (tmp_path / "b_good.py").write_text(SEED)
    (tmp_path / "c_dir.py").mkdir()  # walked like any directory: not an error
    return tmp_path / "a_bad.py", tmp_path / "b_good.py"


def test_json_lists_files_that_could_not_be_checked_with_code_null(tmp_path):
    bad, good = tree(tmp_path)
    missing = tmp_path / "missing.py"
    result = invoke("check", "--output-format", "json", tmp_path, missing)
    assert result.exit_code == 2
    items = json.loads(result.stdout)
    assert isinstance(items, list)
    findings = [item for item in items if item["code"] is not None]
    errors = [item for item in items if item["code"] is None]
    assert [(f["code"], f["filename"]) for f in findings] == [("GF001", str(good))]
    by_file = {e["filename"]: e for e in errors}
    assert set(by_file) == {str(bad), str(missing)}
    syntax = by_file[str(bad)]
    assert syntax["message"].startswith("SyntaxError: ")
    assert syntax["location"] == syntax["end_location"] == {"row": 5, "column": 5}
    assert syntax["fix"] is None and syntax["noqa_row"] is None
    assert by_file[str(missing)] == {
        "code": None, "message": "No such file or directory", "filename": str(missing),
        "location": None, "end_location": None, "fix": None, "noqa_row": None,
    }
    # every entry has the same keys as a finding: consumers that read findings keep working
    assert all(set(item) >= {"code", "message", "filename", "location", "end_location", "fix", "noqa_row"}
               for item in items)
    # stderr still has the one-line errors for a human
    assert f"{bad}:5:5: SyntaxError: " in result.stderr


def test_json_without_errors_is_unchanged(tmp_path):
    (tmp_path / "good.py").write_text(SEED)
    items = json.loads(invoke("check", "--output-format", "json", tmp_path).stdout)
    assert [item["code"] for item in items] == ["GF001"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_json_to_a_file_has_the_errors_too(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    out = tmp_path / "report.json"
    result = invoke("check", "--output-format", "json", "-o", out, fifo)
    assert result.exit_code == 2
    assert json.loads(out.read_text()) == [{
        "code": None, "message": "not a regular file", "filename": str(fifo),
        "location": None, "end_location": None, "fix": None, "noqa_row": None,
    }]


def test_sarif_reports_files_that_could_not_be_checked_as_notifications(tmp_path):
    bad, good = tree(tmp_path)
    result = invoke("check", "--output-format", "sarif", tmp_path)
    assert result.exit_code == 2
    log = json.loads(result.stdout)
    validate_sarif(log)
    (run,) = log["runs"]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["message"]["text"].startswith(f"{bad}: SyntaxError: ")
    physical = note["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == bad.as_uri()
    assert physical["region"] == {"startLine": 5, "startColumn": 5}
    assert [r["ruleId"] for r in run["results"]] == ["GF001"]


def test_sarif_clean_run_is_successful(tmp_path):
    (tmp_path / "good.py").write_text(SEED)
    log = json.loads(invoke("check", "--output-format", "sarif", tmp_path).stdout)
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": True}]


def test_sarif_rules_link_their_documentation():
    findings = []
    from gradfix.findings import Finding

    for i, rule in enumerate(ALL_RULES):
        findings.append(Finding(path="x.py", line=i + 1, col=1, code=rule.CODE, message="m"))
    log = json.loads(render(findings, "sarif"))
    validate_sarif(log)
    uris = {r["id"]: r["helpUri"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert uris == {r.CODE: f"{REPOSITORY_URL}/blob/main/README.md#{r.CODE.lower()}-{r.NAME}" for r in ALL_RULES}
    assert rule_help_uri("GF001", "detached-double-backward").endswith("README.md#gf001-detached-double-backward")


@pytest.mark.parametrize("level", ["error", "warning", "notice"])
def test_github_annotation_level_is_configurable(tmp_path, level):
    (tmp_path / "good.py").write_text(SEED)
    args = ["check", "--output-format", "github", tmp_path] + ([] if level == "error" else ["--github-level", level])
    result = invoke(*args)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"::{level} title=gradfix (GF001),file={tmp_path / 'good.py'},line=11,col=15,")


def test_github_level_must_be_known(tmp_path):
    result = invoke("check", "--output-format", "github", "--github-level", "fatal", tmp_path)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_github_annotates_files_that_could_not_be_checked_as_errors(tmp_path):
    bad, good = tree(tmp_path)
    result = invoke("check", "--output-format", "github", "--github-level", "warning", tmp_path)
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"::error title=gradfix,file={bad},line=5,col=5::SyntaxError: ")
    assert lines[1].startswith(f"::warning title=gradfix (GF001),file={good},")


def _github_slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    import re

    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_help_uri_anchors_exist_in_the_readme():
    """Each rule's helpUri anchor is a heading of the README (`### `GF001` detached-double-backward`)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    anchors = {_github_slug(line.lstrip("#")) for line in readme.splitlines() if line.startswith("#")}
    wanted = {rule_help_uri(r.CODE, r.NAME).rsplit("#", 1)[1]: r.CODE for r in ALL_RULES}
    if not anchors & set(wanted):
        pytest.skip("the README has no per-rule headings yet (see the README text for the rule sections)")
    assert sorted(code for anchor, code in wanted.items() if anchor not in anchors) == []
