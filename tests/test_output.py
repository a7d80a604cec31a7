"""The `--output-format` renderers (gradfix.output): exact text per format, parsed JSON/SARIF."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from gradfix.findings import Finding, Fix, TextEdit
from gradfix.output import FORMATS, render, statistics


def with_edits(finding: Finding, *edits) -> Finding:
    return dataclasses.replace(finding, fix=dataclasses.replace(finding.fix, edits=tuple(edits)))


SOURCE = """\
import torch
import torch.nn.functional as F

x = torch.randn(3, requires_grad=True)
y = torch.randn(3, requires_grad=True)
l1 = F.mse_loss(x.detach(), y)
l1.backward(retain_graph=True)
l2 = -1 * F.mse_loss(x, y.detach())
l2.backward()
print("done")
"""

SAFE = with_edits(
    Finding(
        path="train.py",
        line=8,
        col=11,
        code="GF001",
        message="`F.mse_loss` is evaluated twice",
        fix=Fix(
            safe=True,
            description="Evaluate `F.mse_loss` once with `grad_scale`",
            unsafe_reason="",
        ),
        end_line=8,
        end_col=36,
    ),
    TextEdit(1, 1, "from gradfix.autograd import grad_scale\n"),
    TextEdit(6, 10, "l1 = F.mse_loss(grad_scale(x, -1), y)\nl1.backward()\n"),
)

UNSAFE = with_edits(
    Finding(
        path="train.py",
        line=9,
        col=1,
        code="GF001",
        message="`net` is evaluated twice [unsafe fix: `net` may own parameters]",
        fix=Fix(
            safe=False,
            description="Evaluate `net` once",
            unsafe_reason="`net` may own parameters",
        ),
        end_line=10,
        end_col=6,
    ),
    TextEdit(9, 10, ""),
)

FINDINGS = [SAFE, UNSAFE]
SOURCES = {"train.py": SOURCE}

SAFE_HEADER = "train.py:8:11: GF001 [*] `F.mse_loss` is evaluated twice"
UNSAFE_HEADER = "train.py:9:1: GF001 `net` is evaluated twice [unsafe fix: `net` may own parameters]"

SAFE_DIFF = """\
help: Evaluate `F.mse_loss` once with `grad_scale`
    1 |+from gradfix.autograd import grad_scale
 1  2 | import torch
      ...
 5  6 | y = torch.randn(3, requires_grad=True)
 6    |-l1 = F.mse_loss(x.detach(), y)
 7    |-l1.backward(retain_graph=True)
 8    |-l2 = -1 * F.mse_loss(x, y.detach())
 9    |-l2.backward()
    7 |+l1 = F.mse_loss(grad_scale(x, -1), y)
    8 |+l1.backward()
10  9 | print("done")
"""

UNSAFE_DIFF = """\
help: unsafe fix: Evaluate `net` once
note: unsafe because `net` may own parameters
 8  8 | l2 = -1 * F.mse_loss(x, y.detach())
 9    |-l2.backward()
10  9 | print("done")
"""


def test_formats_tuple():
    assert FORMATS == ("concise", "full", "json", "sarif", "github")


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown output format"):
        render(FINDINGS, "xml")


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_findings(fmt):
    text = render([], fmt, sources=SOURCES)
    if fmt == "json":
        assert text == "[]\n"
    elif fmt == "sarif":
        log = json.loads(text)
        assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []
    else:
        assert text == ""
    assert statistics([]) == ""


# -- concise ---------------------------------------------------------------------


def test_concise():
    assert render(FINDINGS, "concise", sources=SOURCES) == f"{SAFE_HEADER}\n{UNSAFE_HEADER}\n"


def test_concise_without_edits_field_or_fix():
    plain = Finding(path="a.py", line=1, col=2, code="GF001", message="m")
    assert render([plain], "concise") == "a.py:1:2: GF001 m\n"
    assert render([plain], "concise", show_fixes=True) == "a.py:1:2: GF001 m\n"


def test_concise_color():
    colored = render([SAFE], "concise", color=True)
    assert colored == (
        "\x1b[1mtrain.py\x1b[0m\x1b[36m:\x1b[0m8\x1b[36m:\x1b[0m11\x1b[36m:\x1b[0m "
        "\x1b[1;31mGF001\x1b[0m \x1b[36m[*]\x1b[0m `F.mse_loss` is evaluated twice\n"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_escape_codes_without_color(fmt):
    assert "\x1b" not in render(FINDINGS, fmt, sources=SOURCES, show_fixes=True)
    assert "\x1b" not in statistics(FINDINGS)


def test_color_in_full_and_statistics():
    full = render(FINDINGS, "full", sources=SOURCES, color=True)
    assert "\x1b[1;31mGF001\x1b[0m" in full  # the code in the header
    assert "\x1b[32m    7 |+l1 = F.mse_loss(grad_scale(x, -1), y)\x1b[0m" in full
    assert "\x1b[31m 6    |-l1 = F.mse_loss(x.detach(), y)\x1b[0m" in full
    assert "\x1b[" in statistics(FINDINGS, color=True)


def test_concise_show_fixes():
    assert render(FINDINGS, "concise", sources=SOURCES, show_fixes=True) == (
        f"{SAFE_HEADER}\n{SAFE_DIFF}\n{UNSAFE_HEADER}\n{UNSAFE_DIFF}\n"
    )


# -- full ------------------------------------------------------------------------

FULL = f"""\
{SAFE_HEADER}
   |
 6 | l1 = F.mse_loss(x.detach(), y)
 7 | l1.backward(retain_graph=True)
 8 | l2 = -1 * F.mse_loss(x, y.detach())
   |           ^^^^^^^^^^^^^^^^^^^^^^^^^ GF001
 9 | l2.backward()
10 | print("done")
   |
{SAFE_DIFF}
{UNSAFE_HEADER}
   |
 7 | l1.backward(retain_graph=True)
 8 | l2 = -1 * F.mse_loss(x, y.detach())
 9 | l2.backward()
   | ^^^^^^^^^^^^^ GF001
10 | print("done")
   |
{UNSAFE_DIFF}"""


def test_full():
    assert render(FINDINGS, "full", sources=SOURCES) == FULL
    # --show-fixes changes nothing: full always shows the proposed fix
    assert render(FINDINGS, "full", sources=SOURCES, show_fixes=True) == FULL


def test_full_missing_source():
    assert render(FINDINGS, "full", sources={}) == (
        f"{SAFE_HEADER}\n"
        "help: Evaluate `F.mse_loss` once with `grad_scale`\n"
        "  1 |+from gradfix.autograd import grad_scale\n"
        "    ...\n"
        "6   |-<lines 6-9: source unavailable>\n"
        "  7 |+l1 = F.mse_loss(grad_scale(x, -1), y)\n"
        "  8 |+l1.backward()\n"
        "\n"
        f"{UNSAFE_HEADER}\n"
        "help: unsafe fix: Evaluate `net` once\n"
        "note: unsafe because `net` may own parameters\n"
        "9   |-<line 9: source unavailable>\n"
    )
    assert render(FINDINGS, "full") == render(FINDINGS, "full", sources={})


def test_full_out_of_range_positions_do_not_crash():
    odd = [
        with_edits(
            Finding(path="t.py", line=50, col=0, code="GF001", message="far", end_line=3, end_col=0,
                    fix=Fix(safe=True, description="d")),
            TextEdit(40, 60, "x\n"),
            TextEdit(45, 44, ""),  # overlapping and backwards
            TextEdit(0, 0, "y\n"),
        ),
        Finding(path="t.py", line=1, col=99, code="GF001", message="wide", end_line=1, end_col=200),
        Finding(path="t.py", line=2, col=5, code="GF001", message="upside down", end_line=1, end_col=1),
        Finding(path="t.py", line=2, col=2, code="GF001", message="tab", end_line=2, end_col=7),
        Finding(path="empty.py", line=1, col=1, code="GF001", message="empty file"),
    ]
    sources = {"t.py": "a = 1\n\tb = 2\n", "empty.py": ""}
    for fmt in FORMATS:
        assert isinstance(render(odd, fmt, sources=sources, show_fixes=True), str)
    text = render(odd[1:4], "full", sources=sources)
    assert "1 | a = 1\n  |      ^ GF001\n" in text  # a column past the end: one caret there
    assert "2 |     b = 2\n  |        ^ GF001\n" in text  # an end before the start: one caret
    assert "2 |     b = 2\n  |     ^^^^^ GF001\n" in text  # tabs are expanded, carets follow


def test_full_crlf_source_and_multiline_span():
    source = "a = 1\r\nb = f(\r\n    x)\r\nc = 3\r\n"
    finding = Finding(path="w.py", line=2, col=5, code="GF001", message="m", end_line=3, end_col=7)
    assert render([finding], "full", sources={"w.py": source}) == (
        "w.py:2:5: GF001 m\n"
        "  |\n"
        "1 | a = 1\n"
        "2 | b = f(\n"
        "  |     ^^ GF001\n"
        "3 |     x)\n"
        "4 | c = 3\n"
        "  |\n"
    )


# -- json ------------------------------------------------------------------------


def test_json():
    text = render(FINDINGS, "json", sources=SOURCES)
    assert text.endswith("]\n") and text.startswith("[\n  {\n")
    data = json.loads(text)
    assert data == [
        {
            "code": "GF001",
            "message": "`F.mse_loss` is evaluated twice",
            "filename": "train.py",
            "location": {"row": 8, "column": 11},
            "end_location": {"row": 8, "column": 36},
            "fix": {
                "applicability": "safe",
                "message": "Evaluate `F.mse_loss` once with `grad_scale`",
                "unsafe_reason": None,
                "edits": [
                    {
                        "content": "from gradfix.autograd import grad_scale\n",
                        "location": {"row": 1, "column": 1},
                        "end_location": {"row": 1, "column": 1},
                    },
                    {
                        "content": "l1 = F.mse_loss(grad_scale(x, -1), y)\nl1.backward()\n",
                        "location": {"row": 6, "column": 1},
                        "end_location": {"row": 10, "column": 1},
                    },
                ],
            },
            "noqa_row": 8,
        },
        {
            "code": "GF001",
            "message": "`net` is evaluated twice [unsafe fix: `net` may own parameters]",
            "filename": "train.py",
            "location": {"row": 9, "column": 1},
            "end_location": {"row": 10, "column": 6},
            "fix": {
                "applicability": "unsafe",
                "message": "Evaluate `net` once",
                "unsafe_reason": "`net` may own parameters",
                "edits": [{"content": "", "location": {"row": 9, "column": 1}, "end_location": {"row": 10, "column": 1}}],
            },
            "noqa_row": 9,
        },
    ]
    # stable key order
    assert list(data[0]) == ["code", "message", "filename", "location", "end_location", "fix", "noqa_row"]
    assert list(data[0]["fix"]) == ["applicability", "message", "unsafe_reason", "edits"]
    assert list(data[0]["fix"]["edits"][0]) == ["content", "location", "end_location"]
    assert list(data[0]["location"]) == ["row", "column"]


def test_json_without_fix_or_end():
    plain = Finding(path="a.py", line=3, col=4, code="GF001", message="m")
    assert json.loads(render([plain], "json")) == [
        {
            "code": "GF001",
            "message": "m",
            "filename": "a.py",
            "location": {"row": 3, "column": 4},
            "end_location": {"row": 3, "column": 4},
            "fix": None,
            "noqa_row": 3,
        }
    ]


# -- sarif -----------------------------------------------------------------------


def _require(obj, *keys):
    assert isinstance(obj, dict), obj
    for key in keys:
        assert key in obj, (key, obj)


def _check_region(region):
    _require(region, "startLine")
    assert region["startLine"] >= 1 and region.get("startColumn", 1) >= 1
    if "endLine" in region:
        assert region["endLine"] >= region["startLine"]
        if region["endLine"] == region["startLine"]:
            assert region.get("endColumn", 1) >= region.get("startColumn", 1)


def validate_sarif(log):
    """The properties SARIF 2.1.0 requires (and those GitHub code scanning needs)."""
    _require(log, "version", "runs", "$schema")
    assert log["version"] == "2.1.0"
    for run in log["runs"]:
        _require(run, "tool")
        _require(run["tool"], "driver")
        driver = run["tool"]["driver"]
        _require(driver, "name")
        ids = []
        for rule in driver.get("rules", []):
            _require(rule, "id")
            for key in ("shortDescription", "fullDescription", "help"):
                if key in rule:
                    _require(rule[key], "text")
            ids.append(rule["id"])
        assert len(ids) == len(set(ids))
        for result in run.get("results", []):
            _require(result, "message", "ruleId")
            _require(result["message"], "text")
            assert ids[result["ruleIndex"]] == result["ruleId"]
            assert result["level"] in ("none", "note", "warning", "error")
            for location in result["locations"]:
                physical = location["physicalLocation"]
                _require(physical, "artifactLocation", "region")
                _require(physical["artifactLocation"], "uri")
                _check_region(physical["region"])
            for fix in result.get("fixes", []):
                _require(fix, "artifactChanges")
                assert fix["artifactChanges"]
                for change in fix["artifactChanges"]:
                    _require(change, "artifactLocation", "replacements")
                    assert change["replacements"]
                    for replacement in change["replacements"]:
                        _require(replacement, "deletedRegion")
                        _check_region(replacement["deletedRegion"])
                        if "insertedContent" in replacement:
                            _require(replacement["insertedContent"], "text")


def test_sarif():
    import gradfix.rules.gf001_detached_double_backward as gf001

    text = render(FINDINGS, "sarif", sources=SOURCES, version="9.8.7")
    assert text.endswith("}\n")
    log = json.loads(text)
    validate_sarif(log)
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gradfix"
    assert driver["informationUri"] == "https://pypi.org/project/gradfix/"
    assert driver["version"] == "9.8.7"
    assert driver["rules"] == [
        {
            "id": "GF001",
            "name": gf001.NAME,
            "shortDescription": {"text": gf001.SUMMARY},
            "fullDescription": {"text": inspect.getdoc(gf001)},
            "help": {"text": inspect.getdoc(gf001)},
            "helpUri": "https://github.com/gradfix/gradfix/blob/main/README.md#gf001-detached-double-backward",
            "defaultConfiguration": {"level": "warning"},
        }
    ]
    safe, unsafe = run["results"]
    assert safe == {
        "ruleId": "GF001",
        "ruleIndex": 0,
        "level": "warning",
        "message": {"text": "`F.mse_loss` is evaluated twice"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": "train.py"},
                    "region": {"startLine": 8, "startColumn": 11, "endLine": 8, "endColumn": 36},
                }
            }
        ],
        "fixes": [
            {
                "description": {"text": "Evaluate `F.mse_loss` once with `grad_scale`"},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": "train.py"},
                        "replacements": [
                            {
                                "deletedRegion": {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1},
                                "insertedContent": {"text": "from gradfix.autograd import grad_scale\n"},
                            },
                            {
                                "deletedRegion": {"startLine": 6, "startColumn": 1, "endLine": 10, "endColumn": 1},
                                "insertedContent": {"text": "l1 = F.mse_loss(grad_scale(x, -1), y)\nl1.backward()\n"},
                            },
                        ],
                    }
                ],
            }
        ],
        "properties": {"fixApplicability": "safe"},
    }
    # unsafe fixes are not offered in SARIF, but the result says what the fix is and why
    assert "fixes" not in unsafe
    assert unsafe["properties"] == {"fixApplicability": "unsafe", "unsafeReason": "`net` may own parameters"}
    assert unsafe["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 9, "startColumn": 1, "endLine": 10, "endColumn": 6,
    }


def test_sarif_default_version_and_uris():
    import gradfix

    findings = [
        Finding(path="src/my file.py", line=1, col=1, code="GF001", message="m"),
        Finding(path="src/x.py", line=2, col=1, code="GF999", message="unknown rule"),
    ]
    log = json.loads(render(findings, "sarif"))
    validate_sarif(log)
    run = log["runs"][0]
    assert run["tool"]["driver"]["version"] == gradfix.__version__
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["GF001", "GF999"]
    assert run["tool"]["driver"]["rules"][1] == {"id": "GF999", "defaultConfiguration": {"level": "warning"}}
    assert [r["ruleIndex"] for r in run["results"]] == [0, 1]
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/my%20file.py"
    assert location["region"] == {"startLine": 1, "startColumn": 1}


# -- github ----------------------------------------------------------------------


def test_github():
    assert render(FINDINGS, "github") == (
        "::error title=gradfix (GF001),file=train.py,line=8,col=11,endLine=8,endColumn=36"
        "::GF001 `F.mse_loss` is evaluated twice\n"
        "::error title=gradfix (GF001),file=train.py,line=9,col=1,endLine=10,endColumn=6"
        "::GF001 `net` is evaluated twice [unsafe fix: `net` may own parameters]\n"
    )


def test_github_escaping():
    finding = Finding(
        path="dir,a:b/100%.py", line=1, col=2, code="GF001",
        message="50% of a, b: c\nnext\r\nline", end_line=1, end_col=3,
    )
    assert render([finding], "github") == (
        "::error title=gradfix (GF001),file=dir%2Ca%3Ab/100%25.py,line=1,col=2,endLine=1,endColumn=3"
        "::GF001 50%25 of a, b: c%0Anext%0D%0Aline\n"
    )


# -- statistics ------------------------------------------------------------------


def test_statistics():
    import gradfix.rules.gf001_detached_double_backward as gf001

    other = [Finding(path="b.py", line=1, col=1, code="GF999", message="m") for _ in range(12)]
    assert statistics(FINDINGS + other) == (
        "12\tGF999\t[ ]\n"  # an unknown code has no summary
        f" 2\tGF001\t[*] {gf001.SUMMARY}\n"
    )
    assert statistics([UNSAFE]) == f"1\tGF001\t{gf001.SUMMARY}\n"
    # ties: by code
    tie = [Finding(path="a.py", line=1, col=1, code=c, message="m") for c in ("GF999", "GF001")]
    assert [line.split("\t")[1] for line in statistics(tie).splitlines()] == ["GF001", "GF999"]


# -- with the engine ---------------------------------------------------------------

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "GF001" / "positive" / "p01_seed_module_level.py"


def test_engine_findings_render_in_every_format():
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    if not FIXTURE.exists():
        pytest.skip("no fixture")
    data = FIXTURE.read_bytes()
    result = lint_bytes(data, "p01.py", LintOptions(("GF001",)))
    assert result.findings and all(getattr(f, "edits", ()) for f in result.findings)
    sources = {"p01.py": data.decode("utf-8")}
    full = render(result.findings, "full", sources=sources)
    assert "|+" in full and "|-" in full and "source unavailable" not in full
    validate_sarif(json.loads(render(result.findings, "sarif", sources=sources)))
    assert len(json.loads(render(result.findings, "json"))) == len(result.findings)
    assert render(result.findings, "github").count("::error ") == len(result.findings)


# ---------------------------------------------------------------------------
# --unsafe-fixes offers unsafe fixes; it never makes them safe


def test_unsafe_fixes_keeps_applicability_in_json():
    for flag in (False, True):
        data = json.loads(render(FINDINGS, "json", unsafe_fixes=flag))
        assert [item["fix"]["applicability"] for item in data] == ["safe", "unsafe"]
        assert data[1]["fix"]["unsafe_reason"] == "`net` may own parameters"
        assert data[0]["fix"]["unsafe_reason"] is None


def test_unsafe_fixes_offers_unsafe_fixes_in_sarif_marked_unsafe():
    log = json.loads(render(FINDINGS, "sarif", unsafe_fixes=True))
    validate_sarif(log)
    safe, unsafe = log["runs"][0]["results"]
    assert safe["properties"] == {"fixApplicability": "safe"} and "properties" not in safe["fixes"][0]
    assert unsafe["properties"] == {"fixApplicability": "unsafe", "unsafeReason": "`net` may own parameters"}
    (fix,) = unsafe["fixes"]
    assert fix["description"]["text"] == "unsafe fix: Evaluate `net` once (unsafe because `net` may own parameters)"
    assert fix["properties"] == unsafe["properties"]


def test_unsafe_fixes_marks_text_formats_but_keeps_the_unsafe_help():
    concise = render(FINDINGS, "concise", sources=SOURCES, show_fixes=True, unsafe_fixes=True)
    assert "train.py:9:1: GF001 [*] `net` is evaluated twice" in concise
    assert "help: unsafe fix: Evaluate `net` once" in concise
    assert "note: unsafe because `net` may own parameters" in concise
    assert UNSAFE_HEADER + "\n" in render(FINDINGS, "concise")
    assert statistics([UNSAFE]) == statistics([UNSAFE], unsafe_fixes=False)
    assert "[*]" not in statistics([UNSAFE, dataclasses.replace(UNSAFE, code="GF003")])
    assert "[*]" in statistics([UNSAFE, dataclasses.replace(UNSAFE, code="GF003")], unsafe_fixes=True)
