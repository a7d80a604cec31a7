"""`gradfix verify` says OK only about a rewrite that ran (gradfix/harness/coverage.py).

A review (stop 24) met an OK on a rewrite whose gradients differed: all of them were computed under
`if __name__ == "__main__":`, which verify does not run, so both versions left the same state. Now
the compared runs record which lines of the snippet ran, and a changed hunk of the rewrite none of
whose statements ran makes the verdict NOT VERIFIED (exit 1), unless the file may compile code
(`torch.compile`: compiled lines run without line events), where it is a note.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradfix.harness import format_report, verify_pair  # noqa: E402
from gradfix.harness.coverage import changed_hunks, unrun  # noqa: E402

PAIR = """import torch

w = torch.randn(3, requires_grad=True)
x = torch.randn(3, requires_grad=True)


def feature_distance(a, b):
    return ((a - b) ** 2).sum()


{guard}l1 = feature_distance(w.detach(), x)
{indent}l1.backward(retain_graph=True)
{indent}l2 = -1 * feature_distance(w, x.detach())
{indent}l2.backward()
"""
GUARDED = PAIR.format(guard='if __name__ == "__main__":\n    ', indent="    ")
PLAIN = PAIR.format(guard="", indent="")


def rewrite(source: str) -> str:
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    result = lint_bytes(source.encode(), "snippet.py", LintOptions(codes=("GF001",), fix=True))
    assert result.fixed is not None, result.findings
    return result.fixed.decode()


def test_a_rewrite_under_a_main_guard_is_not_verified():
    rewritten = rewrite(GUARDED)
    report = verify_pair(GUARDED, rewritten, filename="snippet.py", repeat=0)
    text = format_report(report)
    assert report.unrun == [(13, 16)], rewritten
    assert not report.ok
    assert "NOT VERIFIED: the rewrite's lines 13-16 never ran in the compared run" in text
    assert "OK:" not in text


def test_the_same_rewrite_at_module_level_is_verified():
    rewritten = rewrite(PLAIN)
    report = verify_pair(PLAIN, rewritten, filename="snippet.py", repeat=0)
    assert report.unrun == []
    assert report.ok
    assert "OK:" in format_report(report)


def test_a_wrong_rewrite_that_ran_is_still_a_mismatch_not_unverified():
    rewritten = rewrite(PLAIN).replace("-1.0", "-2.0")
    report = verify_pair(PLAIN, rewritten, filename="snippet.py", repeat=0)
    text = format_report(report)
    assert not report.ok and report.unrun == []
    assert "MISMATCH" in text and "NOT VERIFIED" not in text


def test_a_rewrite_in_a_function_nothing_calls_is_not_verified():
    source = PLAIN.replace("l1 = feature", "def train():\n    l1 = feature").replace("\nl", "\n    l")
    rewritten = rewrite(source)
    report = verify_pair(source, rewritten, filename="snippet.py", repeat=0)
    assert len(report.unrun) == 1 and not report.ok
    called = source + "\n\ntrain()\n"
    report = verify_pair(called, rewrite(called), filename="snippet.py", repeat=0)
    assert report.unrun == [] and report.ok


def test_where_the_file_may_compile_an_unrun_hunk_is_a_note():
    source = GUARDED.replace("import torch\n", "import torch\n\ncompiled = torch.compile\n", 1)
    report = verify_pair(source, rewrite(source), filename="snippet.py", repeat=0)
    text = format_report(report)
    assert report.unrun and report.ok
    assert "note: the rewrite's lines" in text and "ran compiled" in text and "OK:" in text


def test_the_command_exits_1_on_an_unverified_rewrite(tmp_path: Path):
    snippet = tmp_path / "guarded.py"
    snippet.write_text(GUARDED)
    proc = subprocess.run(
        [sys.executable, "-m", "gradfix", "verify", str(snippet), "--repeat", "0", "--isolated"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "NOT VERIFIED" in proc.stdout


def test_changed_hunks_leave_out_blank_and_comment_lines_and_pure_deletions():
    before = "a = 1\nb = 2\nc = 3\n"
    after = "a = 1\n\n# note\nb = 20\n"
    assert changed_hunks(before, after) == [(3 + 1, 3 + 1)]
    assert changed_hunks("a = 1\nb = 2\n", "a = 1\n") == []


def test_a_hunk_runs_when_any_line_of_its_statement_ran():
    source = "x = f(\n    1,\n    2)\nif x:\n    y = 1\n"
    # The hunk is the continuation line `2)`: its statement starts on line 1.
    assert unrun(source, [(3, 3)], {1}) == []
    assert unrun(source, [(3, 3)], {4}) == [(3, 3)]
    # A compound statement's header stands for itself, not its body.
    assert unrun(source, [(4, 4)], {4}) == []
    assert unrun(source, [(5, 5)], {4}) == [(5, 5)]
