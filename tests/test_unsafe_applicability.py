"""Applicability is a property of the fix, not of `--unsafe-fixes`: every output format says so, through the CLI.

`--unsafe-fixes` used to rewrite each unsafe fix as safe before rendering, so
JSON reported `"applicability": "safe"` with `"unsafe_reason": null` and SARIF
offered the fix as if it were exact.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradfix.cli import main

ROOT = Path(__file__).resolve().parents[1]
UNSAFE = sorted((ROOT / "fixtures" / "GF001" / "unsafe").glob("u*[0-9a-z].py"))
UNSAFE = [p for p in UNSAFE if not p.name.endswith(".fixed.py")]
U05 = ROOT / "fixtures" / "GF001" / "unsafe" / "u05_module_critic_general_coef.py"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _unsafe_items(stdout: str):
    data = json.loads(stdout)
    return [item for item in data if item["fix"] is not None]


@pytest.mark.parametrize("flags", [(), ("--unsafe-fixes",)], ids=["default", "unsafe-fixes"])
@pytest.mark.parametrize("path", UNSAFE, ids=lambda p: p.stem)
def test_json_keeps_an_unsafe_fix_unsafe_with_its_reason(path, flags):
    result = invoke("check", "--no-cache", "--output-format", "json", *flags, path)
    assert result.exit_code == 1, result.output
    items = _unsafe_items(result.stdout)
    assert items
    for item in items:
        assert item["fix"]["applicability"] == "unsafe"
        assert isinstance(item["fix"]["unsafe_reason"], str) and item["fix"]["unsafe_reason"]
        assert item["fix"]["unsafe_reason"] in item["message"]
        assert item["fix"]["edits"]


def test_json_is_the_same_with_and_without_the_flag():
    plain = invoke("check", "--output-format", "json", U05)
    flagged = invoke("check", "--output-format", "json", "--unsafe-fixes", U05)
    assert plain.stdout == flagged.stdout


def _results(stdout: str):
    log = json.loads(stdout)
    return log["runs"][0]["results"]


def test_sarif_without_the_flag_names_the_unsafe_fix_and_offers_none():
    (result,) = _results(invoke("check", "--output-format", "sarif", U05).stdout)
    assert result["properties"]["fixApplicability"] == "unsafe"
    assert "may own trainable parameters" in result["properties"]["unsafeReason"]
    assert "fixes" not in result


def test_sarif_with_the_flag_offers_the_fix_marked_unsafe():
    (result,) = _results(invoke("check", "--output-format", "sarif", "--unsafe-fixes", U05).stdout)
    assert result["properties"]["fixApplicability"] == "unsafe"
    (fix,) = result["fixes"]
    assert fix["description"]["text"].startswith("unsafe fix: ")
    assert "unsafe because" in fix["description"]["text"]
    assert fix["properties"]["fixApplicability"] == "unsafe"
    assert fix["properties"]["unsafeReason"] == result["properties"]["unsafeReason"]


def test_concise_with_the_flag_marks_the_fix_available_and_full_says_unsafe():
    concise = invoke("check", "--unsafe-fixes", U05)
    assert " GF001 [*] " in concise.stdout
    assert "(1 fixable with `gradfix fix --apply`)" in concise.stderr
    full = invoke("check", "--output-format", "full", "--unsafe-fixes", U05)
    assert "help: unsafe fix: " in full.stdout and "note: unsafe because " in full.stdout
    assert " GF001 [*] " not in invoke("check", U05).stdout
