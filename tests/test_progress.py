"""The progress bar of `check` / `fix`: on stderr, only on a terminal, only for long runs.

In-process tests drive the command through click's CliRunner with the
terminal check and the threshold patched; the pty tests run the real
command in a subprocess whose stderr (or stdout) is a pseudo-terminal, with
the real threshold.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradfix import progress
from gradfix.cli import main

ERASE = "\r" + " " * 10  # the start of the erasing write, enough to recognise it

FINDING = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F

    x = torch.randn(4, 3, requires_grad=True)
    y = torch.randn(4, 3, requires_grad=True)


    def step():
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -1 * F.mse_loss(x, y.detach())
        l2.backward()
    """
)


def make_tree(root: Path, clean: int, with_finding: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(clean):
        (root / f"m{i:04d}.py").write_text(f"x = {i}\n", encoding="utf-8")
    if with_finding:
        (root / "train.py").write_text(FINDING, encoding="utf-8")
    return root


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def bar_segments(stderr: str):
    """The bar's drawn lines: the text after each carriage return, up to the next one."""
    return [part for part in stderr.split("\r")[1:] if part.strip()]


@pytest.fixture
def terminal(monkeypatch):
    """Treat stderr as a terminal and draw the bar from 3 files on."""
    monkeypatch.setattr(progress, "is_terminal", lambda stream: stream is sys.stderr)
    monkeypatch.setattr(progress, "PROGRESS_THRESHOLD", 3)


@pytest.fixture(autouse=True)
def no_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADFIX_CACHE_DIR", str(tmp_path / "cache"))


# ----------------------------------------------------------------- in-process


def test_bar_on_stderr_counts_to_the_total_and_is_erased(tmp_path, terminal):
    tree = make_tree(tmp_path / "src", 5)
    result = invoke("check", "--no-cache", "--output-format", "json", tree)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []  # stdout is untouched JSON
    assert "\r" not in result.stdout and "files" not in result.stdout
    drawn = bar_segments(result.stderr)
    assert drawn[0].startswith("gradfix [") and drawn[0].rstrip().endswith("] 0/5 files")
    # the last line drawn shows the whole run done (click's bar stopped at 80% here)
    assert drawn[-1].rstrip().endswith("] 5/5 files") and "#" in drawn[-1]
    assert "-" not in drawn[-1].split("[", 1)[1].split("]", 1)[0]
    # ... and is then erased: spaces over it and the cursor back at column 0
    longest = max(len(s) for s in drawn)
    assert result.stderr.endswith("\r" + " " * longest + "\r")


def test_summary_after_the_bar_starts_on_a_clean_line(tmp_path, terminal):
    tree = make_tree(tmp_path / "src", 4, with_finding=True)
    result = invoke("check", "--no-cache", tree)
    assert result.exit_code == 1
    assert "\r" not in result.stdout
    assert "GF001" in result.stdout
    before, _, summary = result.stderr.rpartition("\r")
    assert before.startswith("\rgradfix [") and before.endswith(" " * 20)
    assert summary.startswith("Found 1 finding")


def test_fix_diff_on_stdout_bar_on_stderr(tmp_path, terminal):
    tree = make_tree(tmp_path / "src", 4, with_finding=True)
    result = invoke("fix", "--no-cache", tree)
    assert result.exit_code == 1
    assert result.stdout.startswith("--- ") and "+++ " in result.stdout
    assert "\r" not in result.stdout and "files" not in result.stdout
    assert "5/5 files" in result.stderr
    assert result.stderr.rpartition("\r")[2].startswith("Would fix 1 finding")


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "PROGRESS_THRESHOLD", 3)  # long enough, but CliRunner's stderr is no tty
    tree = make_tree(tmp_path / "src", 5)
    result = invoke("check", "--no-cache", tree)
    assert result.exit_code == 0
    assert result.stderr == "All checks passed!\n"


def test_no_bar_for_a_short_run_even_on_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "is_terminal", lambda stream: True)
    tree = make_tree(tmp_path / "src", 5)  # below the real threshold
    assert progress.PROGRESS_THRESHOLD > 5
    result = invoke("check", "--no-cache", tree)
    assert result.stderr == "All checks passed!\n"


def test_fix_from_stdin_writes_only_the_source_to_stdout(terminal):
    result = CliRunner().invoke(main, ["fix", "--no-cache", "-"], input=FINDING)
    assert result.exit_code == 0
    assert "\r" not in result.stdout and "grad_scale" in result.stdout
    assert "files" not in result.stderr  # one file: never a bar


# ------------------------------------------------------------- the bar itself


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_is_erased_when_the_run_fails_midway(monkeypatch):
    stream = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", stream)

    def results():
        yield 1
        yield 2
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError):
        with progress.tracked(results(), progress.PROGRESS_THRESHOLD) as items:
            for _ in items:
                pass
    text = stream.getvalue()
    assert text.startswith("\rgradfix [")
    assert text.endswith(ERASE.rstrip(" ") + " " * len(bar_segments(text)[0]) + "\r")


def test_bar_closes_the_results_it_was_given(monkeypatch):
    closed = []

    def results():
        try:
            yield from range(3)
            yield "never taken"
        finally:
            closed.append(True)

    for stream in (FakeTerminal(), io.StringIO()):
        closed.clear()
        monkeypatch.setattr(sys, "stderr", stream)
        monkeypatch.setattr(progress, "PROGRESS_THRESHOLD", 3)
        with progress.tracked(results(), 4) as items:
            assert [next(items) for _ in range(3)] == [0, 1, 2]
        assert closed == [True]


def test_bar_redraws_at_most_every_interval_and_fits_the_terminal(monkeypatch):
    clock = [0.0]

    def tick() -> float:
        clock[0] += 0.01  # each result arrives 10 ms after the last
        return clock[0]

    monkeypatch.setattr(progress.time, "monotonic", tick)
    for columns, total in ((80, 1000), (30, 1000), (12, 1000)):
        stream = FakeTerminal()
        monkeypatch.setattr(progress.ProgressBar, "_columns", staticmethod(lambda s, c=columns: c))
        bar = progress.ProgressBar(total, stream, interval=0.1)
        for done in range(1, total + 1):
            bar.update(done)
        drawn = bar_segments(stream.getvalue())
        # 10 s of results at one draw per 0.1 s: about 100 draws, not 1000
        assert 90 <= len(drawn) <= 110, len(drawn)
        assert all(len(line) <= columns - 1 for line in drawn), (columns, max(map(len, drawn)))
        assert f"{total}/{total} files" in drawn[-1] or columns < 20
        bar.close()
        assert stream.getvalue().endswith("\r")


def test_is_terminal_survives_odd_streams():
    assert progress.is_terminal(None) is False
    assert progress.is_terminal(object()) is False
    closed = io.StringIO()
    closed.close()
    assert progress.is_terminal(closed) is False
    assert progress.is_terminal(FakeTerminal()) is True


# --------------------------------------------------------------- real ttys

pytestmark_pty = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


def run_with_pty(args, cwd: Path, *, tty: str, columns: int = 60):
    """Run `python -m gradfix ARGS` with stderr (tty="stderr") or stdout on a pty.

    Returns (stdout text, stderr text, exit code); the pty side's text has
    the terminal's \\r\\n turned back into \\n.
    """
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = dict(os.environ, GRADFIX_CACHE_DIR=str(cwd / ".cache"), NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gradfix", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave if tty == "stdout" else subprocess.PIPE,
        stderr=slave if tty == "stderr" else subprocess.PIPE,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    piped = (proc.stdout if tty == "stderr" else proc.stderr).read().decode()
    proc.wait(timeout=60)
    on_tty = b"".join(chunks).decode().replace("\r\n", "\n")
    if tty == "stderr":
        return piped, on_tty, proc.returncode
    return on_tty, piped, proc.returncode


@pytestmark_pty
def test_real_terminal_long_run_shows_and_erases_the_bar_json_stays_valid(tmp_path):
    total = progress.PROGRESS_THRESHOLD + 10
    make_tree(tmp_path / "src", total)
    stdout, stderr, code = run_with_pty(
        ["check", "--no-cache", "--output-format", "json", "src"], tmp_path, tty="stderr", columns=60
    )
    assert code == 0, stderr
    assert json.loads(stdout) == []
    drawn = bar_segments(stderr)
    assert drawn and drawn[0].startswith("gradfix [")
    assert drawn[-1].rstrip().endswith(f"] {total}/{total} files")
    assert all(len(line) <= 59 for line in drawn)  # the width of the terminal stderr is on
    assert stderr.endswith("\r" + " " * max(map(len, drawn)) + "\r")


@pytestmark_pty
def test_real_terminal_summary_follows_the_erased_bar(tmp_path):
    make_tree(tmp_path / "src", progress.PROGRESS_THRESHOLD, with_finding=True)
    stdout, stderr, code = run_with_pty(["check", "--no-cache", "src"], tmp_path, tty="stderr")
    assert code == 1
    assert "GF001" in stdout and "\r" not in stdout
    assert "files" in stderr
    assert stderr.rpartition("\r")[2] == "Found 1 finding (1 fixable with `gradfix fix --apply`).\n"


@pytestmark_pty
def test_real_terminal_on_stdout_only_draws_no_bar(tmp_path):
    make_tree(tmp_path / "src", progress.PROGRESS_THRESHOLD + 10)
    stdout, stderr, code = run_with_pty(["check", "--no-cache", "src"], tmp_path, tty="stdout")
    assert code == 0
    assert stderr == "All checks passed!\n"
    assert stdout == ""
