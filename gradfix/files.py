"""File-level facts: which names are Python files, line splitting, atomic writes.

Walking directories with exclusions lives in `gradfix.config.discover_files`."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import tempfile
import time
from pathlib import Path
from typing import Callable, List

# Directories never descended into when walking (explicit file arguments are
# always checked). The same defaults as ruff, so results agree on a tree.
DEFAULT_EXCLUDES = frozenset(
    {
        ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
        ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype",
        ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build",
        "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
        "__pycache__", ".gradfix_cache",
    }
)

PYTHON_SUFFIXES = (".py", ".pyi")
# What a directory walk picks up: Python files and Jupyter notebooks (linted cell by cell, gradfix.notebook).
SOURCE_SUFFIXES = PYTHON_SUFFIXES + (".ipynb",)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lines_with_ends(text: str) -> List[str]:
    """Lines split as Python's tokenizer numbers them (\\r\\n, \\r or \\n), endings kept.

    Unlike `str.splitlines`, a form feed or U+2028 inside a line does not split it,
    so line numbers agree with the findings'.
    """
    return _LINE.findall(text)


class PathProblem(Exception):
    """A path argument that cannot be checked (missing, unreadable, ...)."""


class NotRegularFile(OSError):
    """A path that is not a regular file (a FIFO, a device, a socket): never read, it could block or never end."""


def read_source(path: Path) -> bytes:
    """The bytes of a regular file; `NotRegularFile` for anything else (FIFOs, `/dev/zero`, through symlinks too).

    `os.stat` follows links and never opens the file, so a FIFO does not block
    and a character device is never read.
    """
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(0, "not a regular file", str(path))
    return Path(path).read_bytes()


def restore_final_cr(original: bytes, fixed: bytes) -> bytes:
    """`fixed` with the trailing `\\r` libcst drops from a CR-only file put back.

    libcst's round trip of a module ending in a lone `\\r` loses that last
    `\\r` (`parse_module(b"x = 1\\r").bytes == b"x = 1"`); a fix never removes
    the file's final line ending, so the ones it lost are restored.
    """
    def trailing_crs(data: bytes) -> int:
        return len(data) - len(data.rstrip(b"\r"))

    if not original.endswith(b"\r"):
        return fixed
    missing = trailing_crs(original) - trailing_crs(fixed)
    return fixed + b"\r" * missing if missing > 0 and not fixed.endswith(b"\n") else fixed


# --- writing ------------------------------------------------------------------------------
#
# Temporary files are hidden and named `.<name>.gradfix-tmp-<pid>-<random>`: no
# tool picks them up as sources (no `.py` suffix), and one left behind by a
# process that died (`kill -9` between creating and renaming it) is recognised
# and removed by the next write into the same directory.

TMP_MARK = ".gradfix-tmp-"
_TMP_NAME = re.compile(r"^\..+\.gradfix-tmp-(?P<pid>\d+)-[A-Za-z0-9_]+$")
# The earlier naming (`.<name>.<random>.gradfix-tmp`), and temporary files of
# another machine sharing the directory: stale once older than this.
_OLD_TMP_NAME = re.compile(r"^\..+\.gradfix-tmp$")
STALE_AFTER_S = 24 * 3600
_swept: set = set()


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # on Windows signal 0 is CTRL_C_EVENT: rely on the age there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or cannot tell: keep it
    return True


def clean_stale_temporaries(directory: Path) -> List[str]:
    """Remove gradfix's own temporary files left in `directory` by a process that is gone.

    A file named by this module whose process no longer exists on this machine,
    or one older than a day, is stale; nothing else is touched. Returns the
    names removed. Done once per directory per process; never raises.
    """
    key = os.path.abspath(directory)
    if key in _swept:
        return []
    _swept.add(key)
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = _TMP_NAME.match(entry.name)
        if match is None and not _OLD_TMP_NAME.match(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                continue
            old = now - st.st_mtime > STALE_AFTER_S
            dead = match is not None and not _pid_alive(int(match.group("pid")))
            if old or dead:
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue
    return removed


def _temporary(target: Path):
    return tempfile.mkstemp(prefix=f".{target.name}{TMP_MARK}{os.getpid()}-", dir=target.parent)


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace (or create) `path` with `data` so that readers see the old or the new file, never half.

    The temporary file lives in the same directory (same filesystem, so the
    rename is atomic); an existing file's permission bits are kept.
    `durable=False` skips the fsync, for files that may be lost (the cache).
    """
    target = Path(path).resolve()
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None

    def keep_mode(tmp: str) -> None:
        if mode is not None:
            os.chmod(tmp, mode)

    _write_then_rename(target, data, durable=durable, before_rename=keep_mode)


def _write_then_rename(target: Path, data: bytes, *, durable: bool, before_rename: Callable[[str], None]) -> None:
    """Write `data` to a temporary file beside `target`, call `before_rename(temporary path)`
    (permissions, owner, last checks: it may raise), then rename it over `target`. Whatever
    fails, the temporary file is removed and `target` is untouched."""
    clean_stale_temporaries(target.parent)
    fd, tmp = _temporary(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        before_rename(tmp)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class NotReplaced(Exception):
    """A fixed file that was not written, for a reason that is not an I/O error; `str()` is the message."""


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _unchanged(target: Path, expected: bytes) -> bool:
    try:
        return _digest(read_source(target)) == expected
    except OSError:
        return False


def replace_file(path: Path, data: bytes, *, original: bytes) -> None:
    """Write the fixed `data` over `path`, which held `original` when it was read.

    Never loses work: a file edited since it was read is left alone
    (`NotReplaced`: changed on disk), and so is one the user could not write
    in place (no write permission for this user, or no write bit at all, which
    also stops root: `not writable`) and one with several hard links (a rename
    would split it from its other names, and writing in place would also
    change the copies `cp -al` backups keep: `has N hard links`). A symlink is
    followed: its target is replaced, the link kept. The new file gets the old
    one's permission bits and, where allowed, its owner and group. The content
    is compared once more right before the rename. OSError for I/O failures;
    the original is then untouched and no temporary file is left.
    """
    target = Path(os.path.realpath(path))
    expected = _digest(original)
    st = os.stat(target)
    if not stat.S_ISREG(st.st_mode):
        raise NotReplaced("not a regular file; not fixed")
    if not _unchanged(target, expected):
        raise NotReplaced("changed on disk since it was read; not fixed")
    if not os.access(target, os.W_OK) or not st.st_mode & 0o222:
        raise NotReplaced("not writable; not fixed")
    if st.st_nlink > 1:
        raise NotReplaced(f"has {st.st_nlink} hard links; not fixed (replacing it would split them)")

    def keep_owner_and_mode(tmp: str) -> None:
        if hasattr(os, "chown"):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                try:  # not allowed to give the file away: keep at least the group where we may
                    os.chown(tmp, -1, st.st_gid)
                except OSError:
                    pass
        os.chmod(tmp, stat.S_IMODE(st.st_mode))  # after chown, which may clear set-id bits
        if not _unchanged(target, expected):
            raise NotReplaced("changed on disk since it was read; not fixed")

    _write_then_rename(target, data, durable=True, before_rename=keep_owner_and_mode)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_output(path: Path, data: bytes) -> None:
    """Write a report (`check -o PATH`): a regular file (or a new one) is replaced whole by rename, so a
    full disk leaves the previous report, never half of the new one; a new file gets the mode `open`
    would give it. Anything else (`/dev/stdout`, a FIFO) is written to directly."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "wb") as handle:
            handle.write(data)
        return
    target = Path(os.path.realpath(path))  # a link to a regular file: replace the file, keep the link
    fd, tmp = _temporary(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
