"""`gradfix/analysis/package_names.py` is what `tools/package_names.py` generates from the installed
torch and numpy (review, round 12): the table of names a proven dotted path may not go through. It
was generated from torch 2.13 and numpy 2.4; with other versions installed the comparison is skipped
(a newer torch may bind a module under a new name: regenerate the table before allowing it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gradfix.analysis.package_names import REFUSED, REFUSED_NAMES

ROOT = Path(__file__).resolve().parent.parent


def test_the_table_is_what_the_tool_generates():
    torch = pytest.importorskip("torch")
    numpy = pytest.importorskip("numpy")
    if not (torch.__version__.startswith("2.13.") and numpy.__version__.startswith("2.4.")):
        pytest.skip(f"the table is of torch 2.13 and numpy 2.4, not {torch.__version__} and {numpy.__version__}")
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "package_names.py"), "--json"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == REFUSED_NAMES


def test_the_known_aliases_are_refused():
    # (what round 12's reproducers went through)
    assert "torch" in REFUSED["torch.nn.functional"]
    assert "F" in REFUSED["torch.nn.modules.activation"]
    assert "FunctionMeta" in REFUSED["torch.autograd.function"]
    assert "utils" in REFUSED["torch"] and "ops" in REFUSED["torch"]
