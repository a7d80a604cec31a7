"""File-level facts: which names are Python files, line splitting, atomic writes.

Walking directories with exclusions lives in `gradfix.config.discover_files`."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path
from typing import List

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


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace (or create) `path` with `data` so that readers see the old or the new file, never half.

    The temporary file lives in the same directory (same filesystem, so the
    rename is atomic); an existing file's permission bits are kept.
    `durable=False` skips the fsync, for files that may be lost (the cache).
    """
    target = Path(path).resolve()
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".gradfix-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
