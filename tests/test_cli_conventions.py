"""The linter conventions through the CLI, as a user drives them: configuration,
file-level suppression, output formats, stdin, statistics, --exit-zero,
--diff, --show-fixes, -o, and the README's rule list.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from gradfix.cli import main
from gradfix.rules import ALL_RULES
from tests.test_cli import SEED, SEED_FIXED, UNSAFE, write

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


# --- configuration -------------------------------------------------------------------


def test_pyproject_ignore_applies_and_nearest_config_wins(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nignore = ["GF001", "GF003", "GF005"]\n')
    quiet = write(tmp_path / "a" / "seed.py", SEED)
    loud = write(tmp_path / "b" / "seed.py", SEED)
    write(tmp_path / "b" / "pyproject.toml", '[tool.gradfix]\nselect = ["GF001"]\n')
    monkeypatch.chdir(tmp_path)
    result = invoke("check", ".")
    assert result.exit_code == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == [str(Path("b") / "seed.py")]
    assert str(quiet.relative_to(tmp_path)) not in result.stdout
    assert loud.exists()


def test_isolated_and_explicit_config(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nignore = ["GF001", "GF003", "GF005"]\n')
    write(tmp_path / "seed.py", SEED)
    other = write(tmp_path / "conf" / "gradfix.toml", 'select = ["GF001"]\n')
    monkeypatch.chdir(tmp_path)
    assert invoke("check", "seed.py").exit_code == 0
    assert invoke("check", "--isolated", "seed.py").exit_code == 1
    assert invoke("check", "--config", other, "seed.py").exit_code == 1


def test_unknown_config_key_is_one_line_naming_file_and_key(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nselct = ["GF001"]\n')
    write(tmp_path / "seed.py", SEED)
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "seed.py")
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line == "gradfix: pyproject.toml: [tool.gradfix] selct: unknown key (did you mean 'select'?)"


def test_bad_value_type_exits_2(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nunsafe-fixes = "yes"\n')
    write(tmp_path / "seed.py", SEED)
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "seed.py")
    assert result.exit_code == 2
    assert "unsafe-fixes" in result.stderr and len(result.stderr.splitlines()) == 1


def test_config_unsafe_fixes_and_inline_op(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nunsafe-fixes = true\ngrad-scale-import = "inline"\n')
    p = write(tmp_path / "u.py", UNSAFE)
    monkeypatch.chdir(tmp_path)
    result = invoke("fix", "--apply", "u.py")
    assert result.exit_code == 0, result.output
    text = p.read_text()
    assert not re.search(r"^(from|import) gradfix", text, re.MULTILINE)
    assert "# gradfix: inline grad_scale" in text
    assert "l1 = crit(grad_scale(x, -1.0), y)" in text
    # A second run reuses the inline definition instead of adding another.
    assert invoke("fix", "--apply", "u.py").exit_code == 0
    assert p.read_text() == text


def test_grad_scale_import_from_a_user_module(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\ngrad-scale-import = "myproj.ops"\n')
    p = write(tmp_path / "seed.py", SEED)
    monkeypatch.chdir(tmp_path)
    assert invoke("fix", "--apply", "seed.py").exit_code == 0
    assert p.read_text() == SEED_FIXED.replace("from gradfix.autograd import", "from myproj.ops import")


def test_per_file_ignores_and_extend_exclude(tmp_path, monkeypatch):
    write(
        tmp_path / "pyproject.toml",
        '[tool.gradfix]\nextend-exclude = ["legacy"]\n[tool.gradfix.per-file-ignores]\n"tests/*" = ["GF001", "GF003", "GF005"]\n',
    )
    write(tmp_path / "tests" / "t.py", SEED)
    write(tmp_path / "legacy" / "old.py", SEED)
    kept = write(tmp_path / "src" / "train.py", SEED)
    monkeypatch.chdir(tmp_path)
    result = invoke("check", ".")
    assert result.stdout.splitlines()[0].startswith(str(kept.relative_to(tmp_path)) + ":11:15:")
    assert len(result.stdout.splitlines()) == 1


# --- suppression -------------------------------------------------------------------


def test_file_level_noqa(tmp_path):
    all_rules = write(tmp_path / "a.py", "# gradfix: noqa\n" + SEED)
    one_rule = write(tmp_path / "b.py", "# gradfix: noqa: GF001\n" + SEED)
    other = write(tmp_path / "c.py", "# gradfix: noqa: GF002\n" + SEED)
    assert invoke("check", all_rules).exit_code == 0
    assert invoke("check", one_rule).exit_code == 0
    assert invoke("check", other).exit_code == 1
    shown = invoke("check", "--ignore-noqa", all_rules)
    assert shown.exit_code == 1 and ":12:15: GF001" in shown.stdout
    # `fix` honours it too: nothing is rewritten.
    assert invoke("fix", "--apply", all_rules).exit_code == 0
    assert all_rules.read_text() == "# gradfix: noqa\n" + SEED


# --- output ---------------------------------------------------------------------------


def test_json_output_fields(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", "--output-format", "json", p)
    assert result.exit_code == 1
    (item,) = json.loads(result.stdout)
    assert item["code"] == "GF001"
    assert item["filename"] == str(p)
    assert item["location"] == {"row": 11, "column": 15}
    assert item["fix"]["applicability"] == "safe"
    edits = item["fix"]["edits"]
    assert edits[0] == {
        "content": "from gradfix.autograd import grad_scale\n",
        "location": {"row": 3, "column": 1},
        "end_location": {"row": 3, "column": 1},
    }
    assert edits[1]["content"] == "    l1 = F.mse_loss(grad_scale(x, -1.0), y)\n    l1.backward()\n"
    assert (edits[1]["location"]["row"], edits[1]["end_location"]["row"]) == (9, 13)


def test_sarif_output_to_file(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    out = tmp_path / "report.sarif"
    result = invoke("check", "--output-format", "sarif", "-o", out, p)
    assert result.exit_code == 1
    assert result.stdout == ""
    log = json.loads(out.read_text())
    assert log["version"] == "2.1.0"
    (res,) = log["runs"][0]["results"]
    assert res["ruleId"] == "GF001"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 11
    assert res["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"].startswith("from gradfix")


def test_github_output(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", "--output-format", "github", p)
    assert result.stdout.startswith(f"::error title=gradfix (GF001),file={p},line=11,col=15,")


def test_full_output_shows_source_and_fix(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", "--output-format", "full", p)
    assert "l2 = -1 * F.mse_loss(x, y.detach())" in result.stdout
    assert "^" in result.stdout
    assert "+    l1 = F.mse_loss(grad_scale(x, -1.0), y)" in result.stdout.replace("|+", "+")


def test_statistics_and_exit_zero(tmp_path):
    write(tmp_path / "a.py", SEED)
    write(tmp_path / "b.py", SEED)
    result = invoke("check", "--statistics", "--exit-zero", tmp_path)
    assert result.exit_code == 0
    assert re.match(r"^\s*2\tGF001\t\[\*\] ", result.stdout)


def test_check_diff_writes_nothing(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", "--diff", p)
    assert result.exit_code == 1
    assert "+    l1 = F.mse_loss(grad_scale(x, -1.0), y)\n" in result.stdout
    assert p.read_text() == SEED


def test_show_fixes_on_check(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", "--show-fixes", p)
    assert "Evaluate `F.mse_loss` once with `grad_scale`" in result.stdout


def test_unsafe_fixes_flag_marks_unsafe_fix_available(tmp_path):
    p = write(tmp_path / "u.py", UNSAFE)
    assert " [*] " not in invoke("check", p).stdout
    assert " [*] " in invoke("check", "--unsafe-fixes", p).stdout


# --- standard input ------------------------------------------------------------------


def test_check_stdin_with_filename(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "--stdin-filename", "pkg/train.py", "-", input=SEED)
    assert result.exit_code == 1
    assert result.stdout.startswith("pkg/train.py:11:15: GF001 [*] ")


def test_check_stdin_config_from_filename(tmp_path, monkeypatch):
    write(tmp_path / "pkg" / "pyproject.toml", '[tool.gradfix]\nignore = ["GF001", "GF003", "GF005"]\n')
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "--stdin-filename", "pkg/train.py", "-", input=SEED)
    assert result.exit_code == 0


def test_fix_stdin_writes_fixed_source_to_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("fix", "-", input=SEED)
    assert result.exit_code == 0
    assert result.stdout == SEED_FIXED
    clean = invoke("fix", "-", input="x = 1\n")
    assert clean.stdout == "x = 1\n" and clean.exit_code == 0


# --- rule docs ---------------------------------------------------------------------------


def test_rule_docs_come_from_the_docstring():
    result = invoke("rule", "GF001")
    for heading in ("## What it does", "## Why it is costly", "## Example and rewrite", "## Fix safety"):
        assert heading in result.stdout


def test_readme_rule_table_matches_the_registry():
    """The README's rule table is checked against the registry, row by row."""
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `(GF\d{3})` \| `([a-z0-9-]+)` \| (yes|opt-in) \| (\w+) \| (.+?) \|$", readme, re.MULTILINE)
    expected = [(r.CODE, r.NAME, "yes" if r.DEFAULT else "opt-in", r.FIXABLE, r.SUMMARY) for r in ALL_RULES]
    assert rows == expected


def test_inline_op_copies_execute_like_the_runtime_module(tmp_path):
    """`grad-scale-import = "inline"` copies grad_scale (and scaled_params_call) into the file;
    the rewritten file must give the original's gradients with no gradfix import at all."""
    import pytest

    harness = pytest.importorskip("gradfix.harness")
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    for name in ("p02_seed_step_function", "p27_module_disc_cancelling", "p28_module_general_coef"):
        path = ROOT / "fixtures" / "GF001" / "positive" / f"{name}.py"
        result = lint_bytes(path.read_bytes(), str(path), LintOptions(("GF001",), fix=True, grad_scale_import="inline"))
        fixed = result.fixed.decode()
        assert not re.search(r"^(from|import) gradfix", fixed, re.MULTILINE)
        assert fixed.count("# gradfix: inline grad_scale") == 1
        report = harness.verify_pair(path.read_text(), fixed, filename=str(path), repeat=0)
        assert report.error is None and report.ok, harness.format_report(report)
        again = lint_bytes(result.fixed, str(path), LintOptions(("GF001",), fix=True, grad_scale_import="inline"))
        assert again.findings == [] and again.fixed is None
