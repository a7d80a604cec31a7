"""I/O that never loses work: what `fix --apply` does to the files it writes, and input it must not read.

Driven as a user would: the CLI on real files.  Permission cases run for real
as an unprivileged user: directly when the tests do not run as root, else
through `setpriv` as `nobody` (skipped where neither is possible).  Each
failure is one line naming the file, exit 2, and the other files are still
processed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import gradfix.files
import gradfix.parallel
from gradfix.cli import main
from tests.test_cli import SEED, SEED_FIXED

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534
TMP_NAME = re.compile(r"^\.(?P<target>.+)\.gradfix-tmp-(?P<pid>\d+)-[A-Za-z0-9_]+$")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def write(path: Path, data, mode=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        path.chmod(mode)
    return path


def error_lines(stderr: str, path) -> list:
    return [line for line in stderr.splitlines() if line.startswith(f"{path}:")]


def assert_one_line(result_or_proc, path, message: str) -> None:
    stderr = result_or_proc.stderr
    output = getattr(result_or_proc, "output", stderr)
    assert "Traceback" not in output
    exit_code = getattr(result_or_proc, "exit_code", None)
    exit_code = result_or_proc.returncode if exit_code is None else exit_code
    assert exit_code == 2, output
    lines = error_lines(stderr, path)
    assert lines == [f"{path}: {message}"], stderr


def cli(*args, timeout=60, user=None, cwd=None, **kwargs):
    """`python -m gradfix ...` in a subprocess, as `user` (a uid) when given."""
    command = [sys.executable, "-m", "gradfix", *map(str, args)]
    if user is not None and os.geteuid() != user:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env, **kwargs)


@pytest.fixture
def unprivileged(tmp_path):
    """(uid, directory): a user that file permissions apply to, and a directory it can use."""
    if os.geteuid() != 0:
        return os.geteuid(), tmp_path
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot run as a user that permissions apply to")
    directory = Path(tempfile.mkdtemp(prefix="gradfix-io-"))
    directory.chmod(0o777)
    os.chown(directory, NOBODY, NOBODY)
    probe = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "true"])
    if probe.returncode != 0:  # pragma: no cover - a container without the capability
        shutil.rmtree(directory)
        pytest.skip("setpriv cannot switch to nobody here")
    # `nobody` must be able to run this checkout's gradfix: not so in a clone inside a private
    # directory (`mktemp -d` makes it 0700), where every run as `nobody` would fail to import.
    imports = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", "import gradfix.cli"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=directory, capture_output=True,
    )
    if imports.returncode != 0:
        shutil.rmtree(directory)
        pytest.skip("nobody cannot import this checkout's gradfix (a private directory on the way to it)")
    yield NOBODY, directory
    for dirpath, dirnames, _ in os.walk(directory):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
    shutil.rmtree(directory)


def own(path: Path, uid: int) -> Path:
    if os.geteuid() == 0:
        os.chown(path, uid, uid)
    return path


def temporaries(directory: Path) -> list:
    return sorted(name for name in os.listdir(directory) if ".gradfix-tmp" in name)


# ---------------------------------------------------------------------------
# 1. a file changed on disk while gradfix worked is not overwritten


def test_file_edited_during_the_run_is_left_alone_and_others_are_fixed(tmp_path, monkeypatch):
    edited = write(tmp_path / "a_edited.py", SEED)
    other = write(tmp_path / "b_other.py", SEED)
    users_edit = SEED + "# saved by the editor while gradfix ran\n"
    real = gradfix.parallel.lint_many

    def lint_many(*args, **kwargs):
        # The files were read; an editor saves one of them before the fixes are written.
        results = list(real(*args, **kwargs))
        edited.write_text(users_edit)
        return iter(results)

    monkeypatch.setattr(gradfix.parallel, "lint_many", lint_many)
    result = invoke("fix", "--apply", tmp_path)
    assert_one_line(result, edited, "changed on disk since it was read; not fixed")
    assert edited.read_text() == users_edit
    assert other.read_text() == SEED_FIXED
    assert temporaries(tmp_path) == []


def test_edit_between_writing_the_copy_and_the_rename_is_caught(tmp_path, monkeypatch):
    """The content is compared once more after the new file is written, right before the rename."""
    target = write(tmp_path / "seed.py", SEED)
    real_fsync = os.fsync

    def fsync(fd):
        real_fsync(fd)
        target.write_text("# rewritten by hand meanwhile\n")

    monkeypatch.setattr(gradfix.files.os, "fsync", fsync)
    with pytest.raises(gradfix.files.NotReplaced, match="changed on disk since it was read"):
        gradfix.files.replace_file(target, SEED_FIXED.encode(), original=SEED.encode())
    assert target.read_text() == "# rewritten by hand meanwhile\n"
    assert temporaries(tmp_path) == []


# ---------------------------------------------------------------------------
# 2. what the user could not write in place is not replaced; owner, mode and links kept


def test_read_only_file_is_refused_with_one_line(tmp_path):
    """0444 has no write bit for anyone: refused for every user, root included."""
    ro = write(tmp_path / "a_ro.py", SEED, mode=0o444)
    other = write(tmp_path / "b_other.py", SEED)
    result = invoke("fix", "--apply", tmp_path)
    assert_one_line(result, ro, "not writable; not fixed")
    assert ro.read_text() == SEED
    assert stat.S_IMODE(ro.stat().st_mode) == 0o444
    assert other.read_text() == SEED_FIXED


def test_file_the_user_cannot_write_is_refused_though_the_directory_is_writable(unprivileged):
    """A rename needs only the directory's permission: without this check another user's file
    (0644, owned by root) in a shared directory would be replaced."""
    uid, directory = unprivileged
    if os.geteuid() != 0:
        pytest.skip("needs a file owned by another user")
    theirs = write(directory / "a_theirs.py", SEED, mode=0o644)  # owned by root
    mine = own(write(directory / "b_mine.py", SEED), uid)
    proc = cli("fix", "--apply", "--no-cache", "a_theirs.py", "b_mine.py", user=uid, cwd=directory)
    assert_one_line(proc, "a_theirs.py", "not writable; not fixed")
    assert theirs.read_text() == SEED and theirs.stat().st_uid == 0
    assert mine.read_text() == SEED_FIXED
    assert temporaries(directory) == []


def test_hard_linked_file_is_refused_and_both_names_keep_the_content(tmp_path):
    linked = write(tmp_path / "a_linked.py", SEED)
    os.link(linked, tmp_path / "backup.txt")
    other = write(tmp_path / "b_other.py", SEED)
    result = invoke("fix", "--apply", tmp_path)
    assert_one_line(result, linked, "has 2 hard links; not fixed (replacing it would split them)")
    assert linked.read_text() == SEED == (tmp_path / "backup.txt").read_text()
    assert linked.stat().st_ino == (tmp_path / "backup.txt").stat().st_ino
    assert other.read_text() == SEED_FIXED


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another owner needs root")
def test_owner_group_and_mode_are_kept(tmp_path):
    target = write(tmp_path / "seed.py", SEED, mode=0o640)
    os.chown(target, NOBODY, NOBODY)
    assert invoke("fix", "--apply", target).exit_code == 0
    st = target.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o640)
    assert target.read_text() == SEED_FIXED


def test_symlink_target_written_link_kept_and_edit_check_follows_it(tmp_path, monkeypatch):
    real_file = write(tmp_path / "real" / "seed.py", SEED)
    link = tmp_path / "link.py"
    link.symlink_to(real_file)
    assert invoke("fix", "--apply", link).exit_code == 0
    assert link.is_symlink() and real_file.read_text() == SEED_FIXED

    real_file.write_text(SEED)
    real = gradfix.parallel.lint_many

    def lint_many(*args, **kwargs):
        results = list(real(*args, **kwargs))
        real_file.write_text(SEED + "# edited\n")
        return iter(results)

    monkeypatch.setattr(gradfix.parallel, "lint_many", lint_many)
    result = invoke("fix", "--apply", link)
    assert_one_line(result, link, "changed on disk since it was read; not fixed")
    assert link.is_symlink() and real_file.read_text() == SEED + "# edited\n"


# ---------------------------------------------------------------------------
# 3. CR-only files byte for byte; temporary files named to be skipped and cleaned


@pytest.mark.parametrize("tail", ["", "\n", "\nLAST = 1\n"], ids=["seed-end", "blank-line-end", "code-after"])
def test_cr_only_file_is_fixed_byte_for_byte(tmp_path, tail):
    source = (SEED + tail).replace("\n", "\r").encode()
    expected = (SEED_FIXED + tail).replace("\n", "\r").encode()
    target = write(tmp_path / "cr.py", source)
    result = invoke("fix", "--apply", target)
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == expected


def test_cr_only_file_diff_and_stdin_keep_the_final_cr(tmp_path):
    source = SEED.replace("\n", "\r").encode()
    result = CliRunner().invoke(main, ["fix", "-"], input=source)
    assert result.stdout_bytes == SEED_FIXED.replace("\n", "\r").encode()


def test_temporary_file_is_hidden_and_named_for_gradfix(tmp_path, monkeypatch):
    target = write(tmp_path / "seed.py", SEED)
    seen = []
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        seen.append(Path(src).name)
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(gradfix.files.os, "replace", replace)
    assert invoke("fix", "--apply", target).exit_code == 0
    ours = [name for name in seen if name.startswith(".seed.py.")]
    assert len(ours) == 1, seen
    match = TMP_NAME.match(ours[0])
    assert match and match["target"] == "seed.py" and int(match["pid"]) == os.getpid(), seen
    assert not ours[0].endswith(gradfix.files.SOURCE_SUFFIXES)
    assert all(TMP_NAME.match(name) for name in seen)  # the cache's files too


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_dead_processes_are_removed_on_the_next_write(tmp_path):
    target = write(tmp_path / "seed.py", SEED)
    dead = write(tmp_path / f".seed.py.gradfix-tmp-{_dead_pid()}-abc_123", "half a file")
    live = write(tmp_path / f".other.py.gradfix-tmp-{os.getpid()}-xyz", "being written by a live process")
    unrelated = write(tmp_path / ".seed.py.swp", "an editor's")
    lookalike = write(tmp_path / "notes.gradfix-tmp-1-a", "not hidden: not ours")
    gradfix.files._swept.clear()
    assert invoke("fix", "--apply", target).exit_code == 0
    assert not dead.exists()
    assert live.exists() and unrelated.exists() and lookalike.exists()
    assert target.read_text() == SEED_FIXED


def test_kill_9_during_the_write_leaves_a_temporary_the_next_run_removes(tmp_path):
    """A process killed with SIGKILL between writing the new file and renaming it."""
    target = write(tmp_path / "seed.py", SEED)
    script = (
        "import os, signal, gradfix.files as f\n"
        "real = os.fsync\n"
        "def fsync(fd):\n"
        "    real(fd)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "f.os.fsync = fsync\n"
        f"f.replace_file(f.Path({str(target)!r}), b'new', original=open({str(target)!r}, 'rb').read())\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == -signal.SIGKILL
    left = temporaries(tmp_path)
    assert len(left) == 1 and TMP_NAME.match(left[0]), left
    assert target.read_text() == SEED  # the original is intact
    # gradfix's own walk does not pick the temporary up
    assert invoke("check", tmp_path).stdout.count("GF001") == 1
    proc = cli("fix", "--apply", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert temporaries(tmp_path) == []
    assert target.read_text() == SEED_FIXED


# ---------------------------------------------------------------------------
# 4. input that cannot be read: one line, exit 2, the others still processed


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
@pytest.mark.parametrize("command", [["check"], ["fix", "--apply"]])
def test_fifo_named_on_the_command_line_is_not_read(tmp_path, command):
    fifo = tmp_path / "a_pipe.py"
    os.mkfifo(fifo)
    good = write(tmp_path / "b_good.py", SEED)
    proc = cli(*command, fifo, good, timeout=20)
    assert_one_line(proc, fifo, "not a regular file")
    if command == ["check"]:
        assert f"{good}:11:15: GF001" in proc.stdout
    else:
        assert good.read_text() == SEED_FIXED


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("command", [["check"], ["fix", "--apply"]])
def test_symlink_to_dev_zero_is_not_read(tmp_path, command):
    zero = tmp_path / "a_zero.py"
    zero.symlink_to("/dev/zero")
    good = write(tmp_path / "b_good.py", SEED)
    for args in ([zero, good], [tmp_path]):  # named, and met in a walk
        proc = cli(*command, *args, timeout=20)
        assert_one_line(proc, zero, "not a regular file")
    assert zero.is_symlink() and good.read_text() == (SEED_FIXED if command[0] == "fix" else SEED)


def test_unreadable_directory_in_a_walk_is_one_line(unprivileged):
    uid, directory = unprivileged
    locked = directory / "pkg" / "locked"
    write(locked / "hidden.py", SEED)
    good = own(write(directory / "pkg" / "good.py", SEED), uid)
    locked.chmod(0o000)
    proc = cli("check", "--no-cache", "pkg", user=uid, cwd=directory)
    assert_one_line(proc, Path("pkg", "locked"), "cannot read directory: Permission denied")
    assert "pkg/good.py:11:15: GF001" in proc.stdout
    assert good.read_text() == SEED


def test_unreadable_paths_named_on_the_command_line_are_one_line_each(unprivileged):
    uid, directory = unprivileged
    locked_dir = directory / "locked_dir"
    write(locked_dir / "x.py", SEED)
    closed = directory / "closed"
    write(closed / "inside.py", SEED)
    unreadable = write(directory / "unreadable.py", SEED, mode=0o000)
    good = own(write(directory / "good.py", SEED), uid)
    locked_dir.chmod(0o000)
    closed.chmod(0o600)  # readable listing, but no search permission: stat of inside.py fails
    for command in (["check"], ["fix", "--apply"]):
        proc = cli(*command, "--no-cache", "locked_dir", "closed/inside.py", "unreadable.py", "good.py",
                   user=uid, cwd=directory)
        assert "Traceback" not in proc.stderr
        assert proc.returncode == 2, proc.stderr
        assert error_lines(proc.stderr, "locked_dir") == ["locked_dir: cannot read directory: Permission denied"]
        assert error_lines(proc.stderr, "closed/inside.py") == ["closed/inside.py: cannot read: Permission denied"]
        assert error_lines(proc.stderr, "unreadable.py") == ["unreadable.py: cannot read: Permission denied"]
    assert good.read_text() == SEED_FIXED
    assert unreadable.stat().st_mode & 0o777 == 0


def test_unreadable_directory_simulated(tmp_path, monkeypatch):
    """The same as above in-process, by making the listing fail (so it also runs as root without setpriv)."""
    write(tmp_path / "locked" / "hidden.py", SEED)
    good = write(tmp_path / "good.py", SEED)
    real = os.scandir

    def scandir(path="."):
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = invoke("check", tmp_path)
    assert_one_line(result, tmp_path / "locked", "cannot read directory: Permission denied")
    assert f"{good}:11:15: GF001" in result.stdout


def test_output_file_in_a_missing_directory_is_one_line(tmp_path):
    good = write(tmp_path / "good.py", SEED)
    out = tmp_path / "missing" / "report.json"
    result = invoke("check", good, "--output-format", "json", "-o", out)
    assert "Traceback" not in result.output
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"gradfix: {out}: cannot write: No such file or directory"
    assert not out.parent.exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("args", [["check"], ["check", "--output-format", "json"], ["fix"], ["rule", "--all"]],
                         ids=["check", "json", "fix-diff", "rule"])
def test_standard_output_on_a_full_device_is_one_line(tmp_path, args):
    good = write(tmp_path / "good.py", SEED)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "gradfix", *args, *([str(good)] if args[0] != "rule" else [])],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert "gradfix: cannot write to standard output: No space left on device" in proc.stderr.splitlines()
    assert good.read_text() == SEED


def test_verify_reports_a_missing_snippet_and_still_verifies_the_others(tmp_path):
    pytest.importorskip("torch")
    missing = tmp_path / "nope.py"
    example = ROOT / "examples" / "adversarial_alignment.py"
    result = invoke("verify", missing, example, "--device", "cpu", "--repeat", "0")
    assert "Traceback" not in result.output
    assert result.exit_code == 2
    assert error_lines(result.stderr, missing) == [f"{missing}: No such file or directory"]
    assert f"== {example}" in result.stdout and "OK: " in result.stdout


def test_output_file_is_replaced_whole_and_gets_the_usual_mode(tmp_path, monkeypatch):
    good = write(tmp_path / "good.py", SEED)
    out = tmp_path / "report.json"
    assert invoke("check", good, "--output-format", "json", "-o", out).exit_code == 1
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~_umask()
    previous = out.read_bytes()
    real = os.fdopen

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            self.handle.write(data[: len(data) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(gradfix.files.os, "fdopen", lambda fd, mode: Full(real(fd, mode)))
    result = invoke("check", good, "--output-format", "sarif", "-o", out)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"gradfix: {out}: cannot write: No space left on device"
    assert out.read_bytes() == previous  # the previous report, whole
    assert temporaries(tmp_path) == []


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="no /dev/stdout")
def test_output_file_may_be_a_device(tmp_path):
    good = write(tmp_path / "good.py", SEED)
    proc = cli("check", good, "--output-format", "json", "-o", "/dev/stdout")
    assert proc.returncode == 1, proc.stderr
    assert '"code": "GF001"' in proc.stdout
