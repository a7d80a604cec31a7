"""A content-hash cache of lint results, safe under concurrent runs and against tampering.

An entry is keyed by the SHA-256 of: the file's bytes; gradfix's version and a
digest of its own source files (so an edited checkout never reuses results of
other code); the Python and libcst versions (they decide what parses); and the
file's `gradfix.options.LintOptions`: the rule codes, `fix`, `unsafe_fixes`,
`ignore_noqa` and `grad_scale_import`. The path is not part of
the key (identical files share an entry; a result is given the path it is
looked up for); rules use the path only to label their findings.

Entries are JSON files under the cache directory (`.gradfix_cache/` in the
current directory unless `GRADFIX_CACHE_DIR` names another), written to a
temporary file in the same directory and moved into place with `os.replace`,
so a reader sees a whole entry or none, and two runs writing the same entry
write the same bytes. Results hold no libcst nodes: a fix is its text edits.

Integrity. A result holds code: `fix --apply` writes an entry's fixed bytes
into the user's file, and the edits of JSON/SARIF output are offered as safe
fixes. The cache directory is not trusted (it may be shared through
`GRADFIX_CACHE_DIR`, checked out, or edited by hand), so every entry is
authenticated: its first line is the HMAC-SHA256, under a per-user secret
key, of the rest (the JSON document, which names its own key, so an entry
moved to another name fails too). The key is 32 random bytes in
`gradfix/cache-key` under the user's cache directory (`$XDG_CACHE_HOME`, else
`~/.cache`; `%LOCALAPPDATA%` on Windows), never in the cache directory itself;
it is created with mode 0600 (in a 0700 directory) and published with a
no-clobber hard link, so concurrent first runs agree on one key. A key that is
missing and cannot be created, has the wrong size, is not a regular file, or
(on POSIX) belongs to another user or is readable or writable by group or
others disables the cache for the run (neither read nor written): an entry
is used only if it was written by this user's gradfix. This was chosen over
recomputing fixes on every fix run because it also covers what `check`
reports (findings, and the edits shown as safe fixes), at the cost of one
HMAC per entry.

An entry that fails its MAC, is unreadable, truncated, foreign (another
schema or key) or malformed in any way (wrong types, unknown fields) is a
miss, and a cache that cannot be written is silently not written: the cache
never fails a run and never changes its output.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from gradfix import __version__
from gradfix.engine import FileResult
from gradfix.files import write_atomic
from gradfix.findings import Finding, Fix, TextEdit
from gradfix.options import LintOptions

ENV_DIR = "GRADFIX_CACHE_DIR"
DEFAULT_DIR = ".gradfix_cache"
SCHEMA = 4
KEY_BYTES = 32
KEY_NAME = "cache-key"

_fingerprint: Optional[str] = None


def default_directory() -> Path:
    """`$GRADFIX_CACHE_DIR`, else `.gradfix_cache` in the current directory."""
    return Path(os.environ.get(ENV_DIR) or DEFAULT_DIR)


def default_key_file() -> Path:
    """Where the per-user MAC key lives: the user's cache directory, never the (maybe shared) result cache."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or ""
        if not os.path.isabs(base):  # the XDG spec: a relative value is invalid, ignore it
            base = str(Path.home() / ".cache")
    return Path(base) / "gradfix" / KEY_NAME


def _private(info: os.stat_result) -> bool:
    """A key file only this user can read and write (always true where POSIX modes do not apply)."""
    if not stat.S_ISREG(info.st_mode):
        return False
    if os.name == "nt":
        return True
    return info.st_uid == os.getuid() and not (info.st_mode & 0o077)


def _read_key(path: Path) -> Optional[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not _private(os.fstat(fd)):
            return None
        data = os.read(fd, KEY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == KEY_BYTES else None


def load_key(path: Optional[Path] = None) -> Optional[bytes]:
    """The user's cache key, created on first use; None where there is no trustworthy one."""
    path = Path(path) if path is not None else default_key_file()
    key = _read_key(path)
    if key is not None:
        return key
    if path.exists() or path.is_symlink():
        # Read again: another first run may have linked its key in between our read and this test
        # (the link is atomic and the key complete before it, so a second read sees all of it).
        return _read_key(path)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f".{KEY_NAME}.{os.getpid()}.{os.urandom(4).hex()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(KEY_BYTES))
            try:
                os.link(temporary, path)  # no clobber: of two first runs, one key wins
            except FileExistsError:
                pass
        finally:
            try:
                os.unlink(temporary)
            except OSError:
                pass
    except OSError:
        return None
    return _read_key(path)


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
    `key_file` names the MAC key (default: `default_key_file()`); the key is
    read (or created) on first use, and without one the cache is off.
    The directory is created (with a `.gitignore` and a `CACHEDIR.TAG`) on the
    first write.
    """

    def __init__(self, directory: Optional[os.PathLike] = None, *, key_file: Optional[os.PathLike] = None) -> None:
        self.directory = Path(directory) if directory is not None else default_directory()
        self.key_file = Path(key_file) if key_file is not None else None
        self._secret: Optional[bytes] = None
        self._secret_loaded = False
        self._prepared = False
        self._writable = True
        self.hits = 0
        self.misses = 0

    def _mac_key(self) -> Optional[bytes]:
        if not self._secret_loaded:
            self._secret = load_key(self.key_file)
            self._secret_loaded = True
        return self._secret

    # -- keys ---------------------------------------------------------------
    @staticmethod
    def key(data: bytes, options: LintOptions) -> str:
        """The entry's name: what a `gradfix.parallel.Task` holds but the path."""
        o = options
        settings = json.dumps(
            [fingerprint(), sorted(o.codes), bool(o.fix), bool(o.unsafe_fixes), bool(o.ignore_noqa), o.grad_scale_import]
        ).encode()
        digest = hashlib.sha256(settings + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    @staticmethod
    def _mac(secret: bytes, payload: bytes) -> bytes:
        return hmac.new(secret, payload, hashlib.sha256).hexdigest().encode("ascii")

    # -- reading --------------------------------------------------------------
    def get(self, key: str, path: str) -> Optional[FileResult]:
        """The cached result for `key`, labelled with `path`; None on a miss (see the module doc)."""
        secret = self._mac_key()
        result = None
        if secret is not None:
            try:
                raw = self._entry(key).read_bytes()
                mac, newline, payload = raw.partition(b"\n")
                if newline and hmac.compare_digest(mac, self._mac(secret, payload)):
                    document = json.loads(payload)
                    if (
                        isinstance(document, dict)
                        and set(document) == {"schema", "key", "result"}
                        and document["schema"] == SCHEMA
                        and document["key"] == key
                    ):
                        result = _result_from_json(document["result"], path)
            except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
                result = None  # unreadable or malformed (UnicodeDecodeError, binascii.Error are ValueErrors)
        if result is None:
            self.misses += 1
            return None
        self.hits += 1
        return result

    # -- writing --------------------------------------------------------------
    def put(self, key: str, result: FileResult) -> None:
        """Store `result` (without libcst nodes) under `key`; never raises."""
        if not self._writable:
            return
        secret = self._mac_key()
        if secret is None:
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
            write_atomic(target, self._mac(secret, payload) + b"\n" + payload, durable=False)
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
#
# Writing serialises the dataclasses field by field; reading checks every
# field's type and that no field is missing or unknown (an authenticated entry
# was written by this code, but a malformed one must still be a miss, never a
# crash or a wrong result).


def _finding_to_json(finding: Finding) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(finding):
        if f.name == "path":
            continue
        value = getattr(finding, f.name)
        if f.name == "fix":
            value = None if value is None else _fix_to_json(value)
        out[f.name] = value
    return out


def _fix_to_json(fix: Fix) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(fix):
        value = getattr(fix, f.name)
        if f.name == "edits":
            value = [[e.start_line, e.end_line, e.content] for e in value]
        elif f.name == "first" and value is not None:
            value = list(value)
        elif f.name == "statements":
            value = sorted([line, column] for line, column in value)
        out[f.name] = value
    return out


def _result_to_json(result: FileResult) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(result):
        if f.name == "path":
            continue
        value = getattr(result, f.name)
        if f.name in ("findings", "remaining", "fixed_findings"):
            value = [_finding_to_json(x) for x in value]
        elif f.name == "fixed":
            value = None if value is None else base64.b64encode(value).decode("ascii")
        elif isinstance(value, (bytes, bytearray)):
            raise TypeError(f"unexpected bytes in FileResult.{f.name}")
        out[f.name] = value
    return out


def _int(value: Any) -> int:
    if type(value) is not int:
        raise TypeError("expected an int")
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise TypeError("expected a str")
    return value


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise TypeError("expected a bool")
    return value


def _optional(check, value: Any) -> Any:
    return None if value is None else check(value)


def _list(value: Any) -> List[Any]:
    if type(value) is not list:
        raise TypeError("expected a list")
    return value


def _fields(document: Any, cls, excluded: Sequence[str]) -> Dict[str, Any]:
    """`document` as a dict holding exactly the fields of `cls` but `excluded`."""
    if type(document) is not dict:
        raise TypeError("expected an object")
    expected = {f.name for f in dataclasses.fields(cls)} - set(excluded)
    if set(document) != expected:
        raise KeyError("fields differ")
    return document


def _fix_from_json(item: Any) -> Fix:
    values = _fields(item, Fix, ())
    edits = []
    for entry in _list(values["edits"]):
        if len(_list(entry)) != 3:
            raise ValueError("an edit is (start, end, content)")
        edits.append(TextEdit(_int(entry[0]), _int(entry[1]), _str(entry[2])))
    first = values["first"]
    if first is not None:
        if len(_list(first)) != 2:
            raise ValueError("first is (line, column)")
        first = (_int(first[0]), _int(first[1]))
    statements = []
    for entry in _list(values["statements"]):
        if len(_list(entry)) != 2:
            raise ValueError("a statement is (line, column)")
        statements.append((_int(entry[0]), _int(entry[1])))
    return Fix(
        safe=_bool(values["safe"]),
        description=_str(values["description"]),
        unsafe_reason=_str(values["unsafe_reason"]),
        edits=tuple(edits),
        first=first,
        statements=frozenset(statements),
    )


def _finding_from_json(item: Any, path: str) -> Finding:
    values = _fields(item, Finding, ("path",))
    return Finding(
        path=path,
        line=_int(values["line"]),
        col=_int(values["col"]),
        code=_str(values["code"]),
        message=_str(values["message"]),
        fix=_optional(_fix_from_json, values["fix"]),
        end_line=_int(values["end_line"]),
        end_col=_int(values["end_col"]),
    )


def _result_from_json(document: Any, path: str) -> FileResult:
    values = _fields(document, FileResult, ("path",))
    fixed = values["fixed"]
    if fixed is not None:
        fixed = base64.b64decode(_str(fixed), validate=True)
    return FileResult(
        path=path,
        findings=[_finding_from_json(x, path) for x in _list(values["findings"])],
        fixed=fixed,
        applied=_int(values["applied"]),
        remaining=[_finding_from_json(x, path) for x in _list(values["remaining"])],
        fixed_findings=[_finding_from_json(x, path) for x in _list(values["fixed_findings"])],
        error=_optional(_str, values["error"]),
        suppressed=_int(values["suppressed"]),
    )
