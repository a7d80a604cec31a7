"""Jupyter notebooks: `gradfix check` and `fix` on real `.ipynb` files built with nbformat.

The code cells are linted as one module (a pattern may be split across
cells); findings print as `nb.ipynb:cell N:line:col:` (ruff's form), JSON and
SARIF carry the cell; fixes are written into the cells they fall in, every
other byte of the file (outputs, metadata, key order, indentation) kept, and a
fix that would span cells is reported without one. The fixed notebook's code is
executed against the original's with every gradient compared.
"""

from __future__ import annotations

import difflib
import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

nbformat = pytest.importorskip("nbformat")
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

from gradfix.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

IMPORTS = "import torch\nimport torch.nn.functional as F\n%matplotlib inline"
SETUP = textwrap.dedent(
    """\
    !pip install --quiet something
    torch.manual_seed(0)
    x = torch.randn(4, 3, requires_grad=True)
    y = torch.randn(4, 3, requires_grad=True)
    a = torch.randn(5, requires_grad=True)
    b = torch.randn(5, requires_grad=True)"""
)
# The pattern split over two cells: found, but a fix there would span cells 4 and 5.
SPLIT_FIRST = "m1 = F.mse_loss(a.detach(), b)\nm1.backward(retain_graph=True)"
SPLIT_SECOND = "m2 = -1 * F.mse_loss(a, b.detach())\nm2.backward()"
# The pattern inside one cell: fixed there.
IN_CELL = textwrap.dedent(
    """\
    %time
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()
    print(l1.item(), l2.item())"""
)
IN_CELL_FIXED = textwrap.dedent(
    """\
    %time
    l1_l2 = F.mse_loss(grad_scale(x, -1.0), y)
    l1 = l1_l2.detach().clone()
    l2 = -1 * l1_l2.detach()
    l1_l2.backward()
    print(l1.item(), l2.item())"""
)


def build_notebook(cells=None):
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.4"}
    nb.metadata["custom"] = {"é": "ünïcode", "nested": [1, 2.5, None]}
    nb.cells = cells or [
        new_markdown_cell("# Training step\nTwo passes, one of them detached."),
        new_code_cell(IMPORTS, execution_count=1),
        new_code_cell(SETUP, execution_count=2, outputs=[new_output("stream", name="stdout", text="ok\n")]),
        new_code_cell(SPLIT_FIRST, execution_count=3),
        new_code_cell(SPLIT_SECOND, execution_count=4, metadata={"tags": ["keep"]}),
        new_code_cell(
            IN_CELL,
            execution_count=5,
            outputs=[
                new_output("stream", name="stdout", text="CPU times: user 1 ms\n0.51 -0.51\n"),
                new_output("execute_result", data={"text/plain": "tensor(0.5100)"}, execution_count=5),
            ],
            metadata={"scrolled": True},
        ),
    ]
    return nb


def write(path: Path, nb) -> bytes:
    nbformat.write(nb, str(path))
    return path.read_bytes()


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def cell_sources(data: bytes):
    cells = json.loads(data)["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]


def code(data: bytes, *, drop_magics: bool = True) -> str:
    """The notebook's code cells, concatenated as a script (IPython magic lines dropped)."""
    lines = []
    for cell in json.loads(data)["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for line in source.splitlines():
            lines.append("pass" if drop_magics and line.lstrip().startswith(("%", "!")) else line)
    return "\n".join(lines) + "\n"


def test_check_reports_cell_positions(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "nb.ipynb", build_notebook())
    result = run("check", "--no-cache", "nb.ipynb")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("nb.ipynb:cell 5:1:11: GF001 `F.mse_loss` evaluated twice with complementary `.detach()` (line 1 of cell 4 and here)")
    assert lines[0].endswith("[no fix in a notebook: the rewrite spans cells 4 to 5]")
    assert lines[1].startswith("nb.ipynb:cell 6:4:11: GF001 [*] `F.mse_loss` evaluated twice with complementary `.detach()` (line 2 of cell 6 and here)")
    assert len(lines) == 2
    assert "Found 2 findings (1 fixable with `gradfix fix --apply`)." in result.stderr


def test_json_and_sarif_carry_the_cell(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "nb.ipynb", build_notebook())
    data = json.loads(run("check", "--no-cache", "--output-format", "json", "nb.ipynb").stdout)
    assert [(d["cell"], d["location"]["row"], d["location"]["column"]) for d in data] == [(5, 1, 11), (6, 4, 11)]
    assert data[0]["fix"] is None  # spans cells: no fix offered
    edits = data[1]["fix"]["edits"]
    assert {(e["cell"], e["location"]["row"], e["end_location"]["row"]) for e in edits} == {(2, 3, 3), (6, 2, 6)}
    assert any(e["content"] == "from gradfix.autograd import grad_scale\n" for e in edits)
    sarif = json.loads(run("check", "--no-cache", "--output-format", "sarif", "nb.ipynb").stdout)
    results = sarif["runs"][0]["results"]
    assert [r["properties"]["cell"] for r in results] == [5, 6]
    assert results[1]["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    assert results[1]["properties"]["fixApplicability"] == "safe"
    full = run("check", "--no-cache", "--output-format", "full", "nb.ipynb").stdout
    assert "nb.ipynb:cell 6:4:11: GF001 [*]" in full
    assert "4 | l2 = -1 * F.mse_loss(x, y.detach())" in full
    assert "cell 2\n" in full and "+from gradfix.autograd import grad_scale" in full


def test_fix_apply_rewrites_the_cell_and_keeps_every_other_byte(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = build_notebook()
    original = write(tmp_path / "nb.ipynb", nb)

    dry = run("fix", "--no-cache", "nb.ipynb")
    assert dry.exit_code == 1
    assert (tmp_path / "nb.ipynb").read_bytes() == original
    assert "--- nb.ipynb:cell 6\n+++ nb.ipynb:cell 6\n" in dry.stdout
    assert "--- nb.ipynb:cell 2\n+++ nb.ipynb:cell 2\n" in dry.stdout

    result = run("fix", "--no-cache", "--apply", "nb.ipynb")
    assert result.exit_code == 1, result.output  # the split pattern remains, without a fix
    assert "Fixed 1 finding in 1 file; 1 remaining." in result.stderr
    assert "nb.ipynb:cell 5:1:11: GF001 " in result.stdout
    fixed = (tmp_path / "nb.ipynb").read_bytes()

    # Cell by cell: only cells 2 (the import) and 6 (the rewrite) changed, the magics kept.
    before, after = cell_sources(original), cell_sources(fixed)
    expected = list(before)
    expected[1] = "import torch\nimport torch.nn.functional as F\nfrom gradfix.autograd import grad_scale\n%matplotlib inline"
    expected[5] = IN_CELL_FIXED
    assert after == expected

    # Byte for byte: the file is what nbformat writes for the notebook with those two sources,
    # so outputs, metadata, execution counts, indentation and key order are untouched.
    nb.cells[1].source = expected[1]
    nb.cells[5].source = expected[5]
    assert fixed.decode("utf-8") == nbformat.writes(nb) + "\n"
    changed = [
        line for line in difflib.ndiff(original.decode().splitlines(), fixed.decode().splitlines())
        if line.startswith(("- ", "+ "))
    ]
    assert all(line[2:].startswith('    "') for line in changed), changed  # source list elements only

    # Nothing left to fix: a second run changes nothing.
    again = run("fix", "--no-cache", "--apply", "nb.ipynb")
    assert "Fixed 0 findings in 0 files; 1 remaining." in again.stderr
    assert (tmp_path / "nb.ipynb").read_bytes() == fixed


def test_other_json_layouts_are_kept(tmp_path: Path, monkeypatch):
    """Indent 2, keys in the author's order, non-ASCII escaped, a source stored as one string."""
    monkeypatch.chdir(tmp_path)
    nb = json.loads(nbformat.writes(build_notebook()))
    document = {"nbformat": nb["nbformat"], "nbformat_minor": nb["nbformat_minor"], "metadata": nb["metadata"],
                "cells": [dict(reversed(list(cell.items()))) for cell in nb["cells"]]}
    document["cells"][5]["source"] = IN_CELL  # a plain string
    text = json.dumps(document, indent=2, ensure_ascii=True)  # no trailing newline either
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    assert run("fix", "--no-cache", "--apply", "nb.ipynb").exit_code == 1
    fixed = (tmp_path / "nb.ipynb").read_text(encoding="utf-8")
    document["cells"][1]["source"] = ["import torch\n", "import torch.nn.functional as F\n",
                                      "from gradfix.autograd import grad_scale\n", "%matplotlib inline"]
    document["cells"][5]["source"] = IN_CELL_FIXED
    assert fixed == json.dumps(document, indent=2, ensure_ascii=True)


@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")], ids=["one-line", "compact"])
def test_one_line_notebooks_stay_on_one_line(tmp_path: Path, monkeypatch, separators):
    monkeypatch.chdir(tmp_path)
    document = json.loads(nbformat.writes(build_notebook()))
    text = json.dumps(document, separators=separators, ensure_ascii=False)
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    assert run("fix", "--no-cache", "--apply", "nb.ipynb").exit_code == 1
    document["cells"][1]["source"] = ["import torch\n", "import torch.nn.functional as F\n",
                                      "from gradfix.autograd import grad_scale\n", "%matplotlib inline"]
    document["cells"][5]["source"] = IN_CELL_FIXED.splitlines(True)
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == json.dumps(document, separators=separators, ensure_ascii=False)


def test_fixed_notebook_gives_the_same_gradients(tmp_path: Path, monkeypatch):
    """The fixed cells executed against the original cells: every tensor and gradient compared."""
    pytest.importorskip("torch")
    from gradfix.harness import verify_pair

    monkeypatch.chdir(tmp_path)
    cells = [
        new_code_cell("import torch\nimport torch.nn.functional as F"),
        new_code_cell("torch.manual_seed(0)\nx = torch.randn(8, 3, requires_grad=True)\ny = torch.randn(8, 3, requires_grad=True)"),
        new_markdown_cell("The step:"),
        new_code_cell(IN_CELL, outputs=[new_output("stream", name="stdout", text="0.5 -0.5\n")]),
        new_code_cell("history = [x.grad.clone(), y.grad.clone(), l1.item(), l2.item()]"),
    ]
    original = write(tmp_path / "nb.ipynb", build_notebook(cells))
    result = run("fix", "--no-cache", "--apply", "nb.ipynb")
    assert result.exit_code == 0, result.output
    fixed = (tmp_path / "nb.ipynb").read_bytes()
    assert "grad_scale(x, -1.0)" in code(fixed)
    report = verify_pair(code(original), code(fixed), filename="nb.ipynb", device="cpu", repeat=0)
    assert report.ok, report
    assert not report.error


def test_pattern_in_a_cell_magic_cell_is_fixed_around_the_magic(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    body = IN_CELL.replace("%time\n", "")
    cells = [
        new_code_cell("import torch\nimport torch.nn.functional as F\nfrom gradfix.autograd import grad_scale"),
        new_code_cell("x = torch.randn(4, 3, requires_grad=True)\ny = torch.randn(4, 3, requires_grad=True)\nfiles = !ls\nhelp_me?"),
        new_code_cell("%%capture captured\n" + body),
        new_code_cell("%%bash\necho l1.backward(retain_graph=True)"),
    ]
    write(tmp_path / "nb.ipynb", build_notebook(cells))
    check = run("check", "--no-cache", "nb.ipynb")
    assert check.stdout.startswith("nb.ipynb:cell 3:4:11: GF001 [*] ")
    assert run("fix", "--no-cache", "--apply", "nb.ipynb").exit_code == 0
    after = cell_sources((tmp_path / "nb.ipynb").read_bytes())
    assert after[2] == "%%capture captured\n" + IN_CELL_FIXED.replace("%time\n", "")
    assert after[1].endswith("files = !ls\nhelp_me?") and after[3] == "%%bash\necho l1.backward(retain_graph=True)"


def test_a_fix_across_cells_is_never_applied(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cells = [new_code_cell(IMPORTS), new_code_cell(SETUP), new_code_cell(SPLIT_FIRST), new_code_cell(SPLIT_SECOND)]
    original = write(tmp_path / "nb.ipynb", build_notebook(cells))
    result = run("fix", "--no-cache", "--apply", "--unsafe-fixes", "nb.ipynb")
    assert result.exit_code == 1
    assert "nb.ipynb:cell 4:1:11: GF001 " in result.stdout and "spans cells 3 to 4" in result.stdout
    assert (tmp_path / "nb.ipynb").read_bytes() == original


def test_invalid_notebook_is_one_line_and_the_rest_is_checked(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (tmp_path / "not_a_notebook.ipynb").write_text('{"cells": [], "metadata": {}}', encoding="utf-8")
    (tmp_path / "v3.ipynb").write_text('{"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "metadata": {}}', encoding="utf-8")
    write(tmp_path / "good.ipynb", build_notebook())
    original = (tmp_path / "broken.ipynb").read_bytes()
    for command in (["check"], ["fix", "--apply"]):
        result = run(*command, "--no-cache", ".")
        assert result.exit_code == 2, result.output
        errors = [line for line in result.stderr.splitlines() if "not a valid notebook" in line]
        assert len(errors) == 3, result.stderr
        assert errors[0].startswith("broken.ipynb: not a valid notebook: ")
        assert errors[1].startswith("not_a_notebook.ipynb: not a valid notebook: ")
        assert errors[2] == "v3.ipynb: not a valid notebook: nbformat 3 is not supported (only version 4)"
        assert "Traceback" not in result.output
        assert "good.ipynb:cell 5:1:11: GF001" in result.stdout  # the other files are still processed
        assert (tmp_path / "broken.ipynb").read_bytes() == original


def test_directory_walk_includes_notebooks(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    write(tmp_path / "pkg" / "train.ipynb", build_notebook())
    (tmp_path / "pkg" / ".ipynb_checkpoints").mkdir()
    write(tmp_path / "pkg" / ".ipynb_checkpoints" / "train-checkpoint.ipynb", build_notebook())
    result = run("check", "--no-cache", "--statistics", ".")
    assert result.exit_code == 1
    assert result.stdout.startswith("2\tGF001\t")  # the checkpoint copy is excluded
    listed = run("check", "--no-cache", ".").stdout
    assert f"pkg{os.sep}train.ipynb:cell 6:4:11: GF001 [*]" in listed


def test_stdin_notebook(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = nbformat.writes(build_notebook()) + "\n"
    checked = run("check", "--no-cache", "-", "--stdin-filename", "nb.ipynb", input=data)
    assert checked.stdout.startswith("nb.ipynb:cell 5:1:11: GF001")
    fixed = run("fix", "--no-cache", "-", "--stdin-filename", "nb.ipynb", input=data)
    assert cell_sources(fixed.stdout.encode())[5] == IN_CELL_FIXED


def test_non_python_notebook_is_skipped(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = build_notebook()
    nb.metadata["kernelspec"]["language"] = "R"
    nb.metadata["language_info"]["name"] = "R"
    write(tmp_path / "r.ipynb", nb)
    result = run("check", "--no-cache", "r.ipynb")
    assert result.exit_code == 0 and "All checks passed!" in result.stderr


def test_syntax_error_in_a_cell_names_the_cell(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cells = [new_code_cell(IMPORTS), new_code_cell("x = (1,\n"), new_code_cell(IN_CELL)]
    write(tmp_path / "nb.ipynb", build_notebook(cells))
    result = run("check", "--no-cache", "nb.ipynb")
    assert result.exit_code == 2
    assert result.stderr.startswith("nb.ipynb:cell 2:1:")


def test_precommit_hooks_take_notebooks():
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert hooks.count("types_or: [python, pyi, jupyter]") == 2


def _split_cells(source: str):
    """The source cut into cells before each top-level line that follows a blank line."""
    cells, current = [], []
    lines = source.splitlines(True)
    for k, line in enumerate(lines):
        if current and line[:1] not in ("", " ", "\t", "\n", ")", "]", "}") and k > 0 and lines[k - 1].strip() == "":
            cells.append("".join(current))
            current = []
        current.append(line)
    cells.append("".join(current))
    return cells


@pytest.mark.parametrize("code", ["GF001", "GF002", "GF003", "GF004"])
def test_notebook_fixes_equal_file_fixes(tmp_path: Path, monkeypatch, code: str):
    """Every positive fixture as a one-cell notebook is fixed exactly as the .py file is; split into a
    cell per paragraph, it is fixed the same wherever no fix would span cells."""
    monkeypatch.chdir(tmp_path)
    fixtures = sorted(p for p in (ROOT / "fixtures" / code / "positive").glob("*.py") if not p.name.endswith(".fixed.py"))
    assert fixtures
    fixtures = fixtures[:: max(1, len(fixtures) // 6)]  # a spread of six or so: GF004's analysis is slow
    for path in fixtures:
        source = path.read_text(encoding="utf-8")
        (tmp_path / path.name).write_text(source, encoding="utf-8")
        write(tmp_path / f"{path.stem}.one.ipynb", build_notebook([new_code_cell(source)]))
        write(tmp_path / f"{path.stem}.split.ipynb", build_notebook([new_code_cell(c) for c in _split_cells(source)]))
    result = run("fix", "--no-cache", "--isolated", "--select", code, "--apply", ".")
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    split_applied = 0
    for path in fixtures:
        fixed_py = (tmp_path / path.name).read_text(encoding="utf-8")
        assert fixed_py != path.read_text(encoding="utf-8"), path.name
        one = cell_sources((tmp_path / f"{path.stem}.one.ipynb").read_bytes())
        assert one == [fixed_py], path.name
        split = "".join(cell_sources((tmp_path / f"{path.stem}.split.ipynb").read_bytes()))
        if f"{path.stem}.split.ipynb:cell" in result.stdout:  # a finding left: its fix spans cells
            assert "no fix in a notebook: the rewrite spans cells" in result.stdout
        else:
            assert split == fixed_py, path.name
            split_applied += 1
    assert split_applied >= len(fixtures) // 2


@pytest.mark.parametrize(
    "content",
    [b"[]", b"null", b'{"nbformat": 4}', b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": 3}',
     b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [3]}', b"[" * 100000, b"", b"\xff\xfe{",
     b'{"nbformat": "4", "cells": []}'],
    ids=["list", "null", "no-cells", "cells-int", "cell-int", "deep", "empty", "not-utf8", "version-string"],
)
def test_bad_notebooks_are_one_line_each(tmp_path: Path, monkeypatch, content: bytes):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.ipynb").write_bytes(content)
    for command in (["check"], ["fix", "--apply"]):
        result = run(*command, "--no-cache", "bad.ipynb")
        assert result.exit_code == 2
        lines = result.stderr.splitlines()
        assert lines[0].startswith("bad.ipynb: not a valid notebook: ") and len(lines) == 2, result.stderr
        assert (tmp_path / "bad.ipynb").read_bytes() == content


def test_byte_order_mark_is_kept(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = b"\xef\xbb\xbf" + nbformat.writes(build_notebook()).encode("utf-8")
    (tmp_path / "nb.ipynb").write_bytes(data)
    run("fix", "--no-cache", "--apply", "nb.ipynb")
    fixed = (tmp_path / "nb.ipynb").read_bytes()
    assert fixed.startswith(b"\xef\xbb\xbf{") and fixed != data
    assert cell_sources(fixed[3:])[5] == IN_CELL_FIXED


@pytest.mark.slow
def test_precommit_hook_checks_and_fixes_a_notebook(tmp_path: Path, precommit_hooks):
    """The real pre-commit passes `.ipynb` files to both hooks (`types_or: [..., jupyter]`)."""
    import subprocess

    from tests.test_precommit import PRE_COMMIT, _git

    if not Path(PRE_COMMIT).exists():
        pytest.skip("pre-commit is not installed")
    hooks, rev, home = precommit_hooks
    env = dict(os.environ, PRE_COMMIT_HOME=str(home))
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: gradfix\n  - id: gradfix-fix\n"
    )
    write(project / "train.ipynb", build_notebook())
    _git(project, "add", "-A")
    first = subprocess.run([PRE_COMMIT, "run", "--files", "train.ipynb"], cwd=project, env=env, capture_output=True, text=True)
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert "train.ipynb:cell 6:4:11: GF001 [*]" in output
    assert cell_sources((project / "train.ipynb").read_bytes())[5] == IN_CELL_FIXED  # gradfix-fix rewrote the cell


def test_a_magic_between_the_passes_makes_the_fix_unsafe(tmp_path: Path, monkeypatch):
    """`%run` (or `!cmd`) may run anything: it is not a harmless line between the two passes."""
    monkeypatch.chdir(tmp_path)
    cells = [
        new_code_cell(IMPORTS + "\n" + SETUP),
        new_code_cell(IN_CELL.replace("l1.backward(retain_graph=True)\n", "l1.backward(retain_graph=True)\n%run zero_grads.py\n")),
    ]
    original = write(tmp_path / "nb.ipynb", build_notebook(cells))
    result = run("check", "--no-cache", "nb.ipynb")
    assert result.stdout.startswith("nb.ipynb:cell 2:5:11: GF001 `F.mse_loss`")
    assert "[unsafe fix: an IPython magic or shell command between the two passes" in result.stdout
    assert run("fix", "--no-cache", "--apply", "nb.ipynb").exit_code == 1
    assert (tmp_path / "nb.ipynb").read_bytes() == original
