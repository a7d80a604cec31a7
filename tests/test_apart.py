"""`tests.apart.run_apart`: a program runs as `python train.py` would, in a process of its own."""

import pytest

pytest.importorskip("torch")

from tests.apart import run_apart  # noqa: E402


def test_output_at_exit_and_the_scripts_own_process():
    source = (
        "import atexit, os, sys, torch\n"
        "atexit.register(lambda: print('at exit'))\n"
        "print(__name__, os.path.basename(sys.argv[0]), sys.path[0] == os.getcwd(), sys.stdin.read() == '')\n"
        "torch.mean = lambda t: 'patched'\n"
        "print(torch.randn(1).item())\n"
    )
    first = run_apart(source)
    lines = first.splitlines()
    assert lines[0] == "__main__ train.py True True"
    assert lines[-1] == "at exit"
    # The next program starts clean: torch unpatched, the same random state as a fresh import.
    second = run_apart("import torch\nprint(torch.mean(torch.ones(2)).item())\nprint(torch.randn(1).item())\n")
    assert second.splitlines() == ["1.0", lines[1]]


def test_a_failing_program_reports_its_exit_and_last_error_line():
    assert run_apart("import sys\nsys.exit(3)\n") == "raised (exit 3): []"
    assert run_apart("raise ValueError('bad')\n") == "raised (exit 1): ['ValueError: bad']"
    assert run_apart("import sys\nprint('x', file=sys.stderr)\n") == "x\n"
