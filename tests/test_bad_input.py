"""Bad input: one line naming the file (and position where there is one), never a traceback.

The other files of the run are still checked (and fixed), and the exit code is
2.  Also: `fix --apply` keeps every byte outside the edited region (line
endings, BOM, encodings, tabs, trailing whitespace, missing final newline) and
writes atomically.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import gradfix.files
from gradfix.cli import main

# The seed pattern (finding at 11:15) and its expected rewrite, shared with the CLI tests.
from tests.test_cli import SEED, SEED_FIXED  # noqa: E402

CLEAN = "import torch\n\nx = torch.randn(3)\n"

# Contains both candidate tokens, so the prefilter lets it through to the parser.
SYNTAX_ERROR = b"import torch\n\nl1 = f(x.detach(), y)\nl1.backward(retain_graph=True)\ndef (:\n    pass\n"

FINDING = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+): GF001 ")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def write(path: Path, data, mode=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        path.chmod(mode)
    return path


def no_traceback(result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


def lines_naming(stderr: str, path: Path):
    return [line for line in stderr.splitlines() if line.startswith(f"{path}:")]


def findings_in(stdout: str):
    return [m.groups()[:3] for m in map(FINDING.match, stdout.splitlines()) if m]


def assert_one_error_line(result, path: Path, pattern: str = r".+"):
    no_traceback(result)
    lines = lines_naming(result.stderr, path)
    assert len(lines) == 1, result.stderr
    assert re.fullmatch(re.escape(str(path)) + ":" + pattern, lines[0]), lines[0]
    assert result.exit_code == 2, result.output
    return lines[0]


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


# ---------------------------------------------------------------------------
# syntax errors next to a good file


def test_check_syntax_error_is_one_line_with_position_and_other_files_are_checked(tmp_path):
    bad = write(tmp_path / "a_bad.py", SYNTAX_ERROR)
    good = write(tmp_path / "b_good.py", SEED)
    result = invoke("check", tmp_path)
    assert_one_error_line(result, bad, r"\d+:\d+: SyntaxError: .+")
    assert findings_in(result.stdout) == [(str(good), "11", "15")]


PARSE_HEAD = b"import torch\nl1 = f(x.detach(), y)\nl1.backward(retain_graph=True)\n"


@pytest.mark.parametrize(
    "tail",
    [b"x = = 1\ny = 2\n", b"def (:\n    pass\n", b"foo bar\nq = 1\n", b"return )\nq = 1\n"],
    ids=["double-equals", "def-paren", "two-names", "unmatched-paren"],
)
def test_syntax_error_names_the_line_cpython_names(tmp_path, tail):
    data = PARSE_HEAD + tail
    with pytest.raises(SyntaxError) as info:
        compile(data, "bad.py", "exec")
    assert info.value.lineno == 4
    bad = write(tmp_path / "bad.py", data)
    line = assert_one_error_line(invoke("check", bad), bad, r"\d+:\d+: .+")
    assert line.split(":")[1] == "4", line


def test_fix_apply_syntax_error_file_untouched_and_good_file_fixed(tmp_path):
    bad = write(tmp_path / "a_bad.py", SYNTAX_ERROR)
    good = write(tmp_path / "b_good.py", SEED)
    result = invoke("fix", "--apply", tmp_path)
    assert_one_error_line(result, bad, r"\d+:\d+: SyntaxError: .+")
    assert bad.read_bytes() == SYNTAX_ERROR
    assert good.read_text() == SEED_FIXED
    assert sorted(os.listdir(tmp_path)) == ["a_bad.py", "b_good.py"]


def test_fix_diff_syntax_error_file_is_reported_and_good_file_diffed(tmp_path):
    bad = write(tmp_path / "a_bad.py", SYNTAX_ERROR)
    good = write(tmp_path / "b_good.py", SEED)
    result = invoke("fix", tmp_path)
    assert_one_error_line(result, bad, r"\d+:\d+: SyntaxError: .+")
    assert f"--- {good}\n+++ {good}\n" in result.stdout
    assert str(bad) not in result.stdout
    assert good.read_text() == SEED


def test_several_bad_files_one_line_each(tmp_path):
    bads = [write(tmp_path / f"bad{i}.py", SYNTAX_ERROR) for i in range(3)]
    write(tmp_path / "good.py", SEED)
    result = invoke("check", tmp_path)
    no_traceback(result)
    assert result.exit_code == 2
    for bad in bads:
        assert len(lines_naming(result.stderr, bad)) == 1
    assert len(findings_in(result.stdout)) == 1


# ---------------------------------------------------------------------------
# encodings and odd bytes

TOKENS = b"l1 = f(x.detach(), y)\nl1.backward(retain_graph=True)\n"

BUG_DETECT_ENCODING = (
    "BUG: engine._parse does not catch the SyntaxError that tokenize.detect_encoding (called by libcst) "
    "raises for bad bytes in the first two lines or a bad coding cookie: traceback, exit 1, other files unchecked"
)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"# caf\xe9 \xff\xfe\n" + TOKENS, id="invalid-utf8-line1"),
        pytest.param(b"\xff\xfe" + TOKENS, id="utf16-bom-like-prefix"),
        pytest.param(b"# -*- coding: bogus -*-\n" + TOKENS, id="unknown-coding-cookie"),
        pytest.param(b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n" + TOKENS, id="bom-with-latin1-cookie"),
        pytest.param(TOKENS + b"# \xff\xfe invalid utf-8 later\n", id="invalid-utf8-line3"),
        pytest.param(TOKENS + b's = "\xe9"\n', id="latin1-byte-without-cookie"),
    ],
)
@pytest.mark.parametrize("command", [["check"], ["fix", "--apply"]])
def test_undecodable_file_is_one_line_and_others_are_checked(tmp_path, data, command):
    bad = write(tmp_path / "a_bad.py", data)
    good = write(tmp_path / "b_good.py", SEED)
    result = invoke(*command, tmp_path)
    assert_one_error_line(result, bad, r"\d+:\d+: .+")
    assert bad.read_bytes() == data
    if command == ["check"]:
        assert findings_in(result.stdout) == [(str(good), "11", "15")]
    else:
        assert good.read_text() == SEED_FIXED


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(TOKENS + b"z = 1\x00\n", id="nul-in-code"),
        pytest.param(b"\x00" + TOKENS, id="nul-first"),
        pytest.param(
            TOKENS + b"# comment \x00\n",
            id="nul-in-comment",
        ),
    ],
)
def test_nul_bytes_are_one_line_and_others_are_checked(tmp_path, data):
    bad = write(tmp_path / "a_bad.py", data)
    good = write(tmp_path / "b_good.py", SEED)
    result = invoke("check", tmp_path)
    assert_one_error_line(result, bad, r"\d+:\d+: .+")
    assert findings_in(result.stdout) == [(str(good), "11", "15")]
    fixed = invoke("fix", "--apply", tmp_path)
    assert_one_error_line(fixed, bad, r"\d+:\d+: .+")
    assert bad.read_bytes() == data
    assert good.read_text() == SEED_FIXED


@pytest.mark.parametrize("data", [b"", b"\n", b"\xef\xbb\xbf", b"   \n\t\n", b"# x.detach() .backward()\n"])
def test_empty_and_trivial_files_are_clean(tmp_path, data):
    p = write(tmp_path / "empty.py", data)
    for command in (["check"], ["fix", "--apply"]):
        result = invoke(*command, p)
        no_traceback(result)
        assert result.exit_code == 0, result.output
        assert result.stdout == ""
        assert p.read_bytes() == data


BUG_DEEP_UNARY = (
    "BUG: valid Python with 400+ nested unary operators parses, then libcst's MetadataWrapper "
    "raises RecursionError outside engine._parse: traceback, exit 1"
)


def test_deeply_nested_valid_expression_is_one_line_not_a_traceback(tmp_path):
    data = TOKENS + b"z = " + b"-" * 500 + b"1\n"
    compile(data, "deep.py", "exec")  # valid Python
    bad = write(tmp_path / "a_deep.py", data)
    good = write(tmp_path / "b_good.py", SEED)
    result = invoke("check", tmp_path)
    no_traceback(result)
    # 1: the good file's finding (the deep file checked); 2: the deep file reported as too nested
    assert result.exit_code in (1, 2)
    assert len(lines_naming(result.stderr, bad)) <= 1
    assert findings_in(result.stdout) == [(str(good), "11", "15")]


def test_absurd_paren_nesting_is_one_line_not_a_crash(tmp_path):
    n = 5000
    bad = write(tmp_path / "a_deep.py", TOKENS + b"z = " + b"(" * n + b"1" + b")" * n + b"\n")
    good = write(tmp_path / "b_good.py", SEED)
    proc = subprocess.run(
        [sys.executable, "-m", "gradfix", "check", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert "Traceback" not in proc.stderr
    assert len(lines_naming(proc.stderr, bad)) == 1
    assert findings_in(proc.stdout) == [(str(good), "11", "15")]


# ---------------------------------------------------------------------------
# paths that are not readable Python files


def test_directory_named_like_a_python_file_is_skipped_when_walking(tmp_path):
    (tmp_path / "x.py").mkdir()
    write(tmp_path / "x.py" / "inner.py", SEED)
    write(tmp_path / "clean.py", CLEAN)
    result = invoke("check", tmp_path)
    no_traceback(result)
    # the directory is walked like any directory: its .py file is checked, the directory itself is no error
    assert not lines_naming(result.stderr, tmp_path / "x.py")
    assert findings_in(result.stdout) == [(str(tmp_path / "x.py" / "inner.py"), "11", "15")]
    assert result.exit_code == 1


def test_directory_named_like_a_python_file_given_explicitly(tmp_path):
    d = tmp_path / "x.py"
    d.mkdir()
    for command in (["check"], ["fix", "--apply"]):
        result = invoke(*command, d)
        no_traceback(result)
        assert result.exit_code in (0, 2)
        if result.exit_code == 2:
            assert len(lines_naming(result.stderr, d)) == 1


@pytest.mark.parametrize("command", [["check"], ["fix"], ["fix", "--apply"]])
def test_missing_path_is_one_line_and_others_are_checked(tmp_path, command):
    missing = tmp_path / "nope.py"
    good = write(tmp_path / "good.py", SEED)
    result = invoke(*command, missing, good)
    assert_one_error_line(result, missing, r" .+")
    if command == ["check"]:
        assert findings_in(result.stdout) == [(str(good), "11", "15")]
    if command == ["fix", "--apply"]:
        assert good.read_text() == SEED_FIXED
    assert not missing.exists()


def test_unreadable_file_is_one_line_and_others_are_checked(tmp_path):
    if is_root():
        pytest.skip("root can read a chmod 000 file")
    bad = write(tmp_path / "a_bad.py", SEED, mode=0o000)
    good = write(tmp_path / "b_good.py", SEED)
    try:
        result = invoke("check", tmp_path)
    finally:
        bad.chmod(0o644)
    assert_one_error_line(result, bad, r" .+")
    assert findings_in(result.stdout) == [(str(good), "11", "15")]


@pytest.mark.parametrize("command", [["check"], ["fix", "--apply"]])
def test_unreadable_file_simulated(tmp_path, monkeypatch, command):
    """The same as above, by making the read fail (so it also runs as root)."""
    bad = write(tmp_path / "a_bad.py", SEED)
    good = write(tmp_path / "b_good.py", SEED)
    real = Path.read_bytes

    def read_bytes(self):
        if self.name == "a_bad.py":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = invoke(*command, tmp_path)
    line = assert_one_error_line(result, bad, r" .+")
    assert "Permission denied" in line
    monkeypatch.undo()
    assert bad.read_text() == SEED
    if command == ["check"]:
        assert findings_in(result.stdout) == [(str(good), "11", "15")]
    else:
        assert good.read_text() == SEED_FIXED


def test_read_only_directory_under_fix_apply(tmp_path):
    ro = tmp_path / "ro"
    target = write(ro / "seed.py", SEED)
    ro.chmod(0o500)
    try:
        try:
            (ro / "probe").touch()
        except PermissionError:
            pass
        else:
            (ro / "probe").unlink()
            pytest.skip("this user can write to a 0o500 directory (root)")
        result = invoke("fix", "--apply", ro)
        assert_one_error_line(result, target, r" .+")
        assert target.read_text() == SEED
        assert sorted(os.listdir(ro)) == ["seed.py"]
    finally:
        ro.chmod(0o700)


def test_read_only_directory_simulated(tmp_path, monkeypatch):
    """The temporary file cannot be created (as in a read-only directory), also as root."""
    ro = write(tmp_path / "a_ro.py", SEED)
    good = write(tmp_path / "b_good.py", SEED)
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        if kwargs.get("prefix", "").startswith(".a_ro.py"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real(*args, **kwargs)

    monkeypatch.setattr(gradfix.files.tempfile, "mkstemp", mkstemp)
    result = invoke("fix", "--apply", tmp_path)
    line = assert_one_error_line(result, ro, r" .+")
    assert "Permission denied" in line
    assert ro.read_text() == SEED
    assert good.read_text() == SEED_FIXED
    assert sorted(os.listdir(tmp_path)) == ["a_ro.py", "b_good.py"]


def run_cli_subprocess(*args, timeout=30):
    return subprocess.run(
        [sys.executable, "-m", "gradfix", *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


def test_symlink_loop_in_walked_directory(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    good = write(tmp_path / "good.py", SEED)
    proc = run_cli_subprocess("check", tmp_path)
    assert "Traceback" not in proc.stderr
    assert findings_in(proc.stdout) == [(str(good), "11", "15")]
    assert proc.returncode == 1, proc.stderr


def test_symlink_loop_named_like_python_files(tmp_path):
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    good = write(tmp_path / "good.py", SEED)
    for command in (["check"], ["fix", "--apply"]):
        proc = run_cli_subprocess(*command, tmp_path)
        assert "Traceback" not in proc.stderr
        assert proc.returncode == 2, proc.stderr
        for name in ("a.py", "b.py"):
            assert len(lines_naming(proc.stderr, tmp_path / name)) == 1, proc.stderr
    assert good.read_text() == SEED_FIXED
    assert (tmp_path / "a.py").is_symlink() and (tmp_path / "b.py").is_symlink()


def test_directory_symlink_cycle_is_not_followed(tmp_path):
    good = write(tmp_path / "pkg" / "good.py", SEED)
    (tmp_path / "pkg" / "up").symlink_to("..", target_is_directory=True)
    (tmp_path / "pkg" / "self").symlink_to(".", target_is_directory=True)
    proc = run_cli_subprocess("check", tmp_path)
    assert "Traceback" not in proc.stderr
    assert findings_in(proc.stdout) == [(str(good), "11", "15")]
    assert proc.returncode == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_fifo_in_walked_directory_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    good = write(tmp_path / "good.py", SEED)
    try:
        proc = run_cli_subprocess("check", tmp_path, timeout=60)  # a hang runs forever: 60 s tells it from a loaded machine
    except subprocess.TimeoutExpired:
        pytest.fail("gradfix check hung on a FIFO named pipe.py")
    assert "Traceback" not in proc.stderr
    assert findings_in(proc.stdout) == [(str(good), "11", "15")]
    assert proc.returncode in (1, 2)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_fifo_given_explicitly_is_one_line(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    proc = run_cli_subprocess("check", fifo, timeout=10)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2
    assert len(lines_naming(proc.stderr, fifo)) == 1


# ---------------------------------------------------------------------------
# preservation under fix --apply
#
# Each input is PREFIX + the seed body + SUFFIX, written in some byte-level
# style; after the fix the bytes of PREFIX + the unchanged seed head and of the
# SUFFIX must be identical, and the inserted/rewritten lines must use the same
# style.

PREFIX_LINES = ["# header comment   ", "import os"]
SUFFIX_LINES = ["", "", "def after():", "    return 1  ", "", "", "LAST = 2"]


def build(nl: bytes = b"\n", indent: bytes = b"    ", final_nl: bool = True, head: bytes = b"", trailing=False,
          extra_prefix=(), extra_suffix=()):
    def enc(lines):
        out = []
        for line in lines:
            b = line.encode("utf-8")
            if b.startswith(b"    "):
                b = indent + b[4:]
            out.append(b)
        return out

    seed = SEED.splitlines()
    if trailing:
        seed = [line + " \t " if line.startswith(("x =", "y =")) or line == "import torch" else line for line in seed]
    prefix = list(extra_prefix) + enc(PREFIX_LINES)
    before = prefix + enc(seed[:2])  # up to the import the fix adds after
    middle = enc(seed[2:8])  # blank, x =, y =, blank, blank, def step():
    edited = enc(seed[8:])  # the four statements the fix rewrites
    suffix = enc(SUFFIX_LINES) + list(extra_suffix)
    body = nl.join(before + middle + edited + suffix)
    data = head + body + (nl if final_nl else b"")
    return data, before, middle, suffix


def check_preserved(tmp_path, data, before, middle, suffix, nl=b"\n", indent=b"    ", head=b"", final_nl=True):
    p = write(tmp_path / "style.py", data)
    result = invoke("fix", "--apply", p)
    no_traceback(result)
    assert result.exit_code == 0, result.output
    out = p.read_bytes()
    assert out != data
    assert out.startswith(head)
    body = out[len(head):]
    if final_nl:
        assert body.endswith(nl)
        body = body[: -len(nl)]
    else:
        assert not body.endswith(b"\n")
    lines = body.split(nl)
    n = len(before)
    assert lines[:n] == before
    assert lines[n] == b"from gradfix.autograd import grad_scale"
    assert lines[n + 1 : n + 1 + len(middle)] == middle
    rest = lines[n + 1 + len(middle):]
    assert rest[:2] == [indent + b"l1 = F.mse_loss(grad_scale(x, -1.0), y)", indent + b"l1.backward()"]
    assert rest[2:] == suffix
    return out


def test_crlf_line_endings_are_kept_everywhere(tmp_path):
    data, before, middle, suffix = build(nl=b"\r\n")
    out = check_preserved(tmp_path, data, before, middle, suffix, nl=b"\r\n")
    assert out.count(b"\n") == out.count(b"\r\n") > 0
    assert all(out[i - 1 : i] == b"\r" for i in range(len(out)) if out[i : i + 1] == b"\n")


def test_utf8_bom_is_kept(tmp_path):
    data, before, middle, suffix = build(head=b"\xef\xbb\xbf")
    out = check_preserved(tmp_path, data, before, middle, suffix, head=b"\xef\xbb\xbf")
    assert out.count(b"\xef\xbb\xbf") == 1


def test_latin1_coding_cookie_file_is_kept_byte_exact_outside_the_edit(tmp_path):
    data, before, middle, suffix = build(
        extra_prefix=[b"# -*- coding: latin-1 -*-", b"# caf\xe9 na\xefve"],
        extra_suffix=[b"# \xa9 d\xe9j\xe0 vu", b'NAME = "\xe9t\xe9"'],
    )
    out = check_preserved(tmp_path, data, before, middle, suffix)
    assert b"caf\xe9 na\xefve" in out and b'"\xe9t\xe9"' in out
    assert b"\xc3" not in out  # nothing was re-encoded as UTF-8
    assert out.decode("latin-1").encode("latin-1") == out


def test_tab_indentation_is_kept(tmp_path):
    data, before, middle, suffix = build(indent=b"\t")
    out = check_preserved(tmp_path, data, before, middle, suffix, indent=b"\t")
    assert b"\n    " not in out


def test_missing_final_newline_is_kept(tmp_path):
    data, before, middle, suffix = build(final_nl=False)
    check_preserved(tmp_path, data, before, middle, suffix, final_nl=False)


def test_missing_final_newline_right_after_the_edit_is_kept(tmp_path):
    p = write(tmp_path / "seed.py", SEED.rstrip("\n"))
    result = invoke("fix", "--apply", p)
    assert result.exit_code == 0
    assert p.read_text() == SEED_FIXED.rstrip("\n")


def test_trailing_whitespace_on_untouched_lines_is_kept(tmp_path):
    data, before, middle, suffix = build(trailing=True)
    out = check_preserved(tmp_path, data, before, middle, suffix)
    assert out.count(b" \t \n") == 3
    assert b"# header comment   \n" in out and b"    return 1  \n" in out


def test_crlf_with_bom_tabs_and_no_final_newline_together(tmp_path):
    data, before, middle, suffix = build(nl=b"\r\n", indent=b"\t", head=b"\xef\xbb\xbf", final_nl=False, trailing=True)
    check_preserved(
        tmp_path, data, before, middle, suffix, nl=b"\r\n", indent=b"\t", head=b"\xef\xbb\xbf", final_nl=False
    )


# ---------------------------------------------------------------------------
# atomic write


def test_failed_replace_leaves_the_original_and_no_temporary_file(tmp_path, monkeypatch):
    target = write(tmp_path / "a_target.py", SEED, mode=0o640)
    good = write(tmp_path / "b_good.py", SEED)
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name == "a_target.py":
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(gradfix.files.os, "replace", replace)
    result = invoke("fix", "--apply", tmp_path)
    line = assert_one_error_line(result, target, r" .+")
    assert os.strerror(errno.EIO) in line
    assert target.read_text() == SEED
    assert oct(target.stat().st_mode & 0o777) == oct(0o640)
    assert good.read_text() == SEED_FIXED
    assert sorted(os.listdir(tmp_path)) == ["a_target.py", "b_good.py"]


def test_interrupted_write_leaves_the_original_and_no_temporary_file(tmp_path, monkeypatch):
    target = write(tmp_path / "seed.py", SEED)

    def fsync(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(gradfix.files.os, "fsync", fsync)
    result = invoke("fix", "--apply", target)
    assert result.exit_code != 0
    assert target.read_text() == SEED
    assert sorted(os.listdir(tmp_path)) == ["seed.py"]


def test_write_atomic_failure_cleans_up_directly(tmp_path, monkeypatch):
    target = write(tmp_path / "f.py", b"old")

    def replace(src, dst):
        raise OSError(errno.EXDEV, "boom")

    monkeypatch.setattr(gradfix.files.os, "replace", replace)
    with pytest.raises(OSError):
        gradfix.files.write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.py"]


def test_an_internal_error_stays_one_short_line():
    # A KeyError on a libcst node stringifies the whole node over hundreds of lines.
    from gradfix.parallel import internal_error

    message = internal_error(KeyError("Call(\n" + "    value='x',\n" * 500 + ")"))
    assert "\n" not in message and len(message) < 250
    assert message.startswith("internal error: KeyError: ") and message.endswith("please report it with this file)")
