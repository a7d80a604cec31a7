"""gradfix as a flake8 plugin: the real flake8, in a subprocess, finds the `GF` entry point."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("flake8")

ROOT = Path(__file__).resolve().parents[1]

TRAIN = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F

    x = torch.randn(4, 3, requires_grad=True)
    y = torch.randn(4, 3, requires_grad=True)
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()
    """
)
MESSAGE = (
    "GF001 `F.mse_loss` evaluated twice with complementary `.detach()` (line 6 and here), "
    "both backpropagated: one pass with `grad_scale` gives the same gradients"
)


def flake8(*args: str, cwd: Path, input: bytes = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd, capture_output=True, input=input, timeout=120
    )


def test_flake8_reports_gradfix_findings(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    result = flake8("--select", "GF", "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr.decode()
    assert result.stdout.decode().splitlines() == [f"train.py:8:11: {MESSAGE}"]
    assert result.stderr == b""


def test_flake8_json_like_format_has_row_and_col(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    result = flake8("--select", "GF", "--format", "%(row)d|%(col)d|%(code)s", "train.py", cwd=tmp_path)
    assert result.stdout.decode().splitlines() == ["8|11|GF001"]


def test_flake8_noqa_and_stdin(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN.replace("y.detach())\n", "y.detach())  # noqa: GF001\n"), encoding="utf-8")
    assert flake8("--select", "GF", "train.py", cwd=tmp_path).returncode == 0
    result = flake8("--select", "GF", "--stdin-display-name", "buffer.py", "-", cwd=tmp_path, input=TRAIN.encode())
    assert result.stdout.decode().splitlines() == [f"buffer.py:8:11: {MESSAGE}"]


def test_flake8_opt_in_rule_runs_when_named(tmp_path: Path):
    shutil.copy(ROOT / "fixtures" / "GF002" / "positive" / "p01_vq_quantizer_module.py", tmp_path / "vq.py")
    assert flake8("--select", "GF", "vq.py", cwd=tmp_path).stdout == b""  # GF002 is opt-in
    named = flake8("--select", "GF002", "vq.py", cwd=tmp_path)
    assert named.stdout.decode().startswith("vq.py:20:58: GF002 ")


def test_flake8_syntax_error_is_flake8s_own(tmp_path: Path):
    (tmp_path / "broken.py").write_text("l1 = f(x.detach(), y\nl1.backward(retain_graph=True)\n", encoding="utf-8")
    result = flake8("--select", "GF,E999", "broken.py", cwd=tmp_path)
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 1 and " E999 " in lines[0]
    assert b"Traceback" not in result.stderr


def test_flake8_honours_gradfix_configuration(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.gradfix]\nper-file-ignores = { "train.py" = ["GF"] }\n', encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    assert flake8("--select", "GF", "train.py", cwd=tmp_path).stdout == b""
    (tmp_path / "pyproject.toml").write_text("[tool.gradfix]\nselct = []\n", encoding="utf-8")
    result = flake8("--select", "GF", "train.py", cwd=tmp_path)
    assert result.stdout.decode().splitlines() == [
        "train.py:1:1: GF000 gradfix: pyproject.toml: [tool.gradfix] selct: unknown key (did you mean 'select'?)"
    ]
