"""`--show-fixes` lists exactly the fixes applied (issue 13): the engine reports which findings it
fixed; the CLI no longer guesses from positions, which the import a fix adds shifts (a file with one
safe and one unsafe finding listed both under "Would fix:")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MIXED = '''\
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def safe_step():
    x, y = a * 2, b * 3
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -F.mse_loss(x, y.detach())
    l2.backward()


def unsafe_step(w):
    x, y = a * 2, b * 3
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -w * F.mse_loss(x, y.detach())
    l2.backward()
'''


def _fix(path: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gradfix", "fix", "--show-fixes", *flags, str(path)], capture_output=True, text=True
    )


def _listed(stderr: str, header: str) -> list:
    lines = stderr.splitlines()
    start = lines.index(header) + 1
    return [line.strip() for line in lines[start:] if line.startswith("  ")]


def test_only_the_applied_fix_is_listed(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(MIXED)
    for _ in range(2):  # the second run reads the result cache: it must carry the same list
        proc = _fix(path)
        assert proc.returncode == 1, proc.stderr
        assert _listed(proc.stderr, "Would fix:") == [f"{path}:12:11: GF001 Evaluate `F.mse_loss` once with `grad_scale` and backpropagate once"]
        assert "Would fix 1 finding in 1 file; 1 remaining" in proc.stderr


def test_apply_lists_what_it_fixed_and_unsafe_fixes_add_theirs(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(MIXED)
    proc = _fix(path, "--apply")
    assert _listed(proc.stderr, "Fixed:") == [f"{path}:12:11: GF001 Evaluate `F.mse_loss` once with `grad_scale` and backpropagate once"]
    path.write_text(MIXED)
    proc = _fix(path, "--apply", "--unsafe-fixes")
    assert len(_listed(proc.stderr, "Fixed:")) == 2
    assert proc.returncode == 0, proc.stderr
