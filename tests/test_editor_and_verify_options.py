"""`gradfix fix -` as an editor uses it, and `verify`'s rule selection (issue 14, item 3).

An editor replaces its buffer with what `fix -` prints: on a syntax error, an
invalid notebook or a bad option the input must come back unchanged (never an
empty buffer). `verify` takes `--select`/`--extend-select`/`--ignore` like
`check`, so an opt-in rule (GF002) is verified without a configuration file.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradfix.cli import main

ROOT = Path(__file__).resolve().parents[1]
GF002 = ROOT / "fixtures" / "GF002" / "positive" / "p01_vq_quantizer_module.py"
GF001 = ROOT / "examples" / "adversarial_alignment.py"

BROKEN = b"import torch\nl1 = f(x.detach(), y\nl1.backward(retain_graph=True)\n"


def gradfix(*args: str, input: bytes, cwd: Path) -> subprocess.CompletedProcess:
    """The real command, as an editor runs it: bytes in, bytes out."""
    return subprocess.run([sys.executable, "-m", "gradfix", *args], input=input, capture_output=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize(
    "args, data",
    [
        (["fix", "-"], BROKEN),
        (["fix", "-", "--stdin-filename", "train.py"], BROKEN),
        (["fix", "-", "--stdin-filename", "nb.ipynb"], b'{"cells": ['),
        (["fix", "-", "--select", "XX9"], BROKEN),
        (["fix", "-", "--config", "missing.toml"], BROKEN),
    ],
    ids=["syntax-error", "syntax-error-named", "invalid-notebook", "bad-select", "bad-config"],
)
def test_fix_stdin_echoes_input_on_error(tmp_path: Path, args, data: bytes):
    result = gradfix(*args, "--no-cache", input=data, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == data  # the buffer is kept as it was
    assert len(result.stderr.decode().splitlines()) >= 1
    assert b"Traceback" not in result.stderr


def test_fix_stdin_error_line_names_the_file(tmp_path: Path):
    result = gradfix("fix", "-", "--stdin-filename", "train.py", "--no-cache", input=BROKEN, cwd=tmp_path)
    assert result.stderr.decode().splitlines()[0] == "train.py:2:7: SyntaxError: '(' was never closed"


def test_fix_stdin_still_fixes(tmp_path: Path):
    data = GF001.read_bytes()
    result = gradfix("fix", "-", "--no-cache", input=data, cwd=tmp_path)
    assert result.returncode == 0
    assert b"grad_scale(x, -0.5)" in result.stdout
    clean = gradfix("fix", "-", "--no-cache", input=b"x = 1\n", cwd=tmp_path)
    assert clean.returncode == 0 and clean.stdout == b"x = 1\n"


def test_verify_takes_select(tmp_path: Path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    snippet = tmp_path / "vq.py"
    shutil.copy(GF002, snippet)
    runner = CliRunner()

    default = runner.invoke(main, ["verify", "--device", "cpu", "--repeat", "0", "--isolated", str(snippet)])
    assert default.exit_code == 0, default.output
    assert "nothing to rewrite" in default.output  # GF002 is opt-in

    for option in (["--select", "GF002"], ["--extend-select", "GF002"]):
        result = runner.invoke(main, ["verify", "--device", "cpu", "--repeat", "0", "--isolated", *option, str(snippet)])
        assert result.exit_code == 0, result.output
        assert "rewrote 1 finding" in result.output
        assert "OK:" in result.output

    ignored = runner.invoke(main, ["verify", "--device", "cpu", "--repeat", "0", "--isolated", "--select", "GF002", "--ignore", "GF002", str(snippet)])
    assert ignored.exit_code == 0 and "nothing to rewrite" in ignored.output

    bad = runner.invoke(main, ["verify", "--device", "cpu", "--select", "GF9", str(snippet)])
    assert bad.exit_code == 2


def test_verify_runs_a_notebook(tmp_path: Path, monkeypatch):
    pytest.importorskip("torch")
    nbformat = pytest.importorskip("nbformat")
    from nbformat.v4 import new_code_cell, new_notebook

    monkeypatch.chdir(tmp_path)
    nb = new_notebook()
    nb.cells = [
        new_code_cell("import torch\nimport torch.nn.functional as F\n%matplotlib inline"),
        new_code_cell("x = torch.randn(6, 3, requires_grad=True)\ny = torch.randn(6, 3, requires_grad=True)"),
        new_code_cell("l1 = F.mse_loss(x.detach(), y)\nl1.backward(retain_graph=True)\nl2 = -1 * F.mse_loss(x, y.detach())\nl2.backward()"),
    ]
    nbformat.write(nb, str(tmp_path / "nb.ipynb"))
    before = (tmp_path / "nb.ipynb").read_bytes()
    result = CliRunner().invoke(main, ["verify", "--device", "cpu", "--repeat", "0", "nb.ipynb"])
    assert result.exit_code == 0, result.output
    assert "rewrote 1 finding" in result.output and "OK:" in result.output
    assert (tmp_path / "nb.ipynb").read_bytes() == before  # verify writes nothing
