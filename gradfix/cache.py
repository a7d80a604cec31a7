"""A content-hash cache of lint results, safe under concurrent runs.

An entry is keyed by the SHA-256 of: the file's bytes; gradfix's version and a
digest of its own source files (so an edited checkout never reuses results of
other code); the Python and libcst versions (they decide what parses); and the
effective settings of the run for that file: the rule codes, `fix`,
`unsafe_fixes`, `ignore_noqa`, `with_edits` and `grad_scale_import`. The
path is not part of the key (identical files share an entry; a result is
given the path it is looked up for); rules use the path only to label their
findings.

Entries are JSON files under the cache directory (`.gradfix_cache/` in the
current directory unless `GRADFIX_CACHE_DIR` names another), written to a
temporary file in the same directory and moved into place with `os.replace`,
so a reader sees a whole entry or none, and two runs writing the same entry
write the same bytes. An unreadable, corrupt or foreign entry is a miss, and a
cache that cannot be written is silently not written: the cache never fails a
run. Results hold no libcst nodes (see `gradfix.parallel.strip_nodes`).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from gradfix import __version__
from gradfix.engine import FileResult
from gradfix.files import write_atomic
from gradfix.findings import Finding, Fix, TextEdit

ENV_DIR = "GRADFIX_CACHE_DIR"
DEFAULT_DIR = ".gradfix_cache"
SCHEMA = 1

_fingerprint: Optional[str] = None


def default_directory() -> Path:
    """`$GRADFIX_CACHE_DIR`, else `.gradfix_cache` in the current directory."""
    return Path(os.environ.get(ENV_DIR) or DEFAULT_DIR)


def fingerprint() -> str:
    """What, besides a file and the settings, decides its result: gradfix's code, Python, libcst."""
    global _fingerprint
    if _fingerprint is None:
        digest = hashlib.sha256()
        digest.update(f"schema {SCHEMA} gradfix {__version__} python {sys.version}\n".encode())
        try:
            from importlib.metadata import version

            digest.update(f"libcst {version('libcst')}\n".encode())
        except Exception:  # noqa: BLE001 - not installed as a distribution: the source digest still counts
            digest.update(b"libcst ?\n")
        package = Path(__file__).resolve().parent
        for path in sorted(package.rglob("*.py")):
            digest.update(str(path.relative_to(package)).encode() + b"\0")
            try:
                digest.update(path.read_bytes())
            except OSError:
                digest.update(b"?")
        _fingerprint = digest.hexdigest()[:16]
    return _fingerprint


class Cache:
    """Results of linting files, by content and settings.

    `Cache()` uses `default_directory()`; `Cache(directory)` another one.
    The directory is created (with a `.gitignore` and a `CACHEDIR.TAG`) on the
    first write.
    """

    def __init__(self, directory: Optional[os.PathLike] = None) -> None:
        self.directory = Path(directory) if directory is not None else default_directory()
        self._prepared = False
        self._writable = True
        self.hits = 0
        self.misses = 0

    # -- keys ---------------------------------------------------------------
    @staticmethod
    def key(
        data: bytes,
        rule_codes: Sequence[str],
        fix: bool = False,
        unsafe_fixes: bool = False,
        ignore_noqa: bool = False,
        with_edits: bool = False,
        grad_scale_import: str = "gradfix.autograd",
    ) -> str:
        """The entry's name: the same arguments as a `gradfix.parallel.Task` from the bytes on."""
        settings = json.dumps(
            [fingerprint(), sorted(rule_codes), bool(fix), bool(unsafe_fixes), bool(ignore_noqa), bool(with_edits), grad_scale_import]
        ).encode()
        digest = hashlib.sha256(settings + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    # -- reading --------------------------------------------------------------
    def get(self, key: str, path: str) -> Optional[FileResult]:
        """The cached result for `key`, labelled with `path`; None on a miss."""
        try:
            raw = self._entry(key).read_bytes()
            document = json.loads(raw)
            if document.get("schema") != SCHEMA or document.get("key") != key:
                raise ValueError("foreign entry")
            result = _result_from_json(document["result"], path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.misses += 1
            return None
        self.hits += 1
        return result

    # -- writing --------------------------------------------------------------
    def put(self, key: str, result: FileResult) -> None:
        """Store `result` (without libcst nodes) under `key`; never raises."""
        if not self._writable:
            return
        try:
            document = {"schema": SCHEMA, "key": key, "result": _result_to_json(result)}
            payload = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError):
            return  # something not serialisable (a result with libcst nodes): not cached
        try:
            self._prepare()
            target = self._entry(key)
            target.parent.mkdir(parents=True, exist_ok=True)
            # Concurrent runs may write the same entry: each replaces it whole.
            write_atomic(target, payload, durable=False)
        except OSError:
            self._writable = False  # read-only or full: run on without the cache

    def _prepare(self) -> None:
        if self._prepared:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, text in (
            (".gitignore", "# Created by gradfix: the cache is never committed.\n*\n"),
            ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by gradfix.\n"),
        ):
            marker = self.directory / name
            if not marker.exists():
                try:
                    write_atomic(marker, text.encode("utf-8"), durable=False)
                except OSError:
                    pass
        self._prepared = True

    def clear(self) -> None:
        """Remove every entry (and the directory)."""
        import shutil

        shutil.rmtree(self.directory, ignore_errors=True)
        self._prepared = False


# --------------------------------------------------------------------------- JSON


def _finding_to_json(finding: Finding) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(finding):
        if f.name == "path":
            continue
        value = getattr(finding, f.name)
        if f.name == "fix":
            value = None if value is None else _fix_to_json(value)
        elif f.name == "edits":
            value = [[e.start_line, e.end_line, e.content] for e in value]
        out[f.name] = value
    return out


def _fix_to_json(fix: Fix) -> Dict[str, Any]:
    if fix.replacements:
        raise TypeError("a fix with libcst replacements is not cached")
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(fix):
        if f.name == "replacements":
            continue
        value = getattr(fix, f.name)
        out[f.name] = [list(item) for item in value] if f.name == "imports" else value
    return out


def _finding_from_json(item: Dict[str, Any], path: str) -> Finding:
    values = dict(item)
    fix = values.get("fix")
    if fix is not None:
        fix = dict(fix)
        fix["imports"] = tuple(tuple(i) for i in fix.get("imports", ()))
        values["fix"] = Fix(replacements={}, **fix)
    values["edits"] = tuple(TextEdit(*e) for e in values.get("edits", ()))
    return Finding(path=path, **values)


def _result_to_json(result: FileResult) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(result):
        if f.name == "path":
            continue
        value = getattr(result, f.name)
        if f.name in ("findings", "remaining"):
            value = [_finding_to_json(x) for x in value]
        elif f.name == "fixed":
            value = None if value is None else base64.b64encode(value).decode("ascii")
        elif isinstance(value, (bytes, bytearray)):
            raise TypeError(f"unexpected bytes in FileResult.{f.name}")
        out[f.name] = value
    return out


def _result_from_json(document: Dict[str, Any], path: str) -> FileResult:
    values = dict(document)
    for name in ("findings", "remaining"):
        values[name] = [_finding_from_json(x, path) for x in values.get(name, ())]
    if values.get("fixed") is not None:
        values["fixed"] = base64.b64decode(values["fixed"])
    return FileResult(path=path, **values)
