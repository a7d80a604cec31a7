"""gradfix.api: the documented Python API (check and fix source text or paths), tested as a
library user would call it; the fixed source is executed against the original."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradfix import api

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = (ROOT / "examples" / "adversarial_alignment.py").read_text()


def test_check_source_gives_the_findings_with_positions():
    findings = api.check_source(EXAMPLE, path="adversarial_alignment.py")
    assert [(f.code, f.line, f.col, f.fixable) for f in findings] == [("GF001", 42, 23, True)]


def test_fix_source_gives_the_fixed_text_and_what_it_applied():
    result = api.fix_source(EXAMPLE, path="adversarial_alignment.py")
    assert result.error is None and result.remaining == []
    assert [(f.code, f.line) for f in result.applied] == [("GF001", 42)]
    assert "from gradfix.autograd import grad_scale\n" in result.source
    assert "feature_distance(grad_scale(x, -0.5), y)" in result.source
    assert api.check_source(result.source) == []  # a fixed point
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(EXAMPLE, result.source, filename="adversarial_alignment.py", device="cpu", repeat=0)
    assert report.error is None and report.ok


def test_options_select_rules_and_unsafe_fixes():
    source = (ROOT / "fixtures" / "GF001" / "unsafe" / "u05_module_critic_general_coef.py").read_text()
    assert [f.fixable for f in api.check_source(source)] == [False]
    assert api.fix_source(source).applied == []
    assert len(api.fix_source(source, options=api.Options(unsafe_fixes=True)).applied) == 1
    assert api.check_source(source, options=api.Options(select=("GF002",))) == []
    with pytest.raises(ValueError):
        api.check_source(source, options=api.Options(select=("GF999",)))


def test_errors_are_results_not_exceptions():
    result = api.fix_source("x.detach(\nl.backward(retain_graph=True)\n", path="bad.py")
    assert result.error is not None and result.source.startswith("x.detach(")


def test_check_paths_walks_directories_with_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gradfix]\nignore = ["GF001"]\n')
    (tmp_path / "train.py").write_text(EXAMPLE)
    (tmp_path / "notes.txt").write_text("not python")
    results = api.check_paths([tmp_path, tmp_path / "missing.py"])
    assert list(results) == sorted(results)
    # The configuration ignores GF001: GF003's merge of the two backward calls is what is left.
    assert [f.code for f in results[str(tmp_path / "train.py")].findings] == ["GF003"]
    isolated = api.check_paths([tmp_path], isolated=True)
    assert [f.code for f in isolated[str(tmp_path / "train.py")].findings] == ["GF001"]
    assert results[str(tmp_path / "missing.py")].error == "No such file or directory"
    assert str(tmp_path / "notes.txt") not in results


def test_options_build_the_engines_lint_options():
    options = api.Options(select=("GF",), ignore=("GF002",), unsafe_fixes=True).lint_options(fix=True)
    assert options == api.LintOptions(("GF001", "GF003", "GF004", "GF005"), fix=True, unsafe_fixes=True)
    assert api.Options().lint_options().codes == ("GF001", "GF003", "GF004", "GF005")
    import pickle

    assert pickle.loads(pickle.dumps(options)) == options and hash(options) == hash(options)
    with pytest.raises(TypeError):
        api.LintOptions((object(),))


def test_check_paths_reads_notebooks_as_their_code_cells(tmp_path):
    import json

    pytest.importorskip("nbformat")
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": part}
             for part in EXAMPLE.split("\n\n\n")]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "train.ipynb").write_text(json.dumps(notebook))
    findings = api.check_paths([tmp_path])[str(tmp_path / "train.ipynb")].findings
    assert [(f.code, f.cell) for f in findings] == [("GF001", len(cells))]


def test_lint_paths_is_the_command_lines_run(tmp_path):
    target = tmp_path / "train.py"
    target.write_text(EXAMPLE)
    (tmp_path / "broken.py").write_text("l1 = f(x.detach(), y)\nl1.backward(retain_graph=True)\ndef (:\n")
    run = api.lint_paths([tmp_path], api.RunOptions(jobs=1, no_cache=True), fix=True)
    assert [path for path, _ in run.errors] == [str(tmp_path / "broken.py")]
    (outcome,) = [o for o in run.outcomes if o.path == str(target)]
    assert outcome.result.applied == 1 and "+from gradfix.autograd import grad_scale" in outcome.diff()
    assert target.read_text() == EXAMPLE  # nothing written until asked
    assert outcome.write_fix() is None and target.read_bytes() == outcome.result.fixed
    assert outcome.write_fix() is not None  # the file no longer holds what was read: left alone
    with pytest.raises(ValueError):
        api.lint_paths([tmp_path], api.RunOptions(select=("GF999",)))
