"""`[tool.gradfix]` configuration: discovery, validation, and what it decides per file.

Modelled on ruff:

* Each checked file gets the settings of the nearest configuration file,
  searching from the file's directory upward: in each directory
  `.gradfix.toml`, then `gradfix.toml` (the table at the top level; always
  used, as ruff's `ruff.toml`), then a `pyproject.toml` that has a
  `[tool.gradfix]` table (one without it is skipped). `--config PATH` replaces
  discovery for every file (`PATH` is a `pyproject.toml` with
  `[tool.gradfix]`, or a `gradfix.toml`-style file whose top level is the
  table); `--isolated` uses the defaults only.
* `extend = "../pyproject.toml"` reads another configuration file first, as
  ruff does: the extending file's keys override, `extend-exclude` adds up, and
  each file's rule selection is a layer over the one it extends (a `select`
  starts over). Globs and `cache-dir` stay relative to the file that wrote
  them. Command-line `--exclude` replaces every configuration's `exclude`,
  `--extend-exclude` adds to it (relative to the current directory).
* Relative paths and globs in a configuration are relative to the directory
  of the file that holds it.
* Rule selection layers like ruff's: the configuration is one layer, the
  command line another on top of it. A layer with a `select` starts over from
  that selection (so `--select` on the command line discards the
  configuration's `select`, `extend-select` and `ignore`); within a layer,
  selectors apply from least specific (`ALL`) to most specific (a full code),
  an `ignore` winning over a `select` of the same specificity. Per-file
  ignores are removed last, whatever was selected.
* Globs (`exclude`, `extend-exclude`, `per-file-ignores`) are ruff's: a glob
  is matched against the absolute path it names (the glob joined to the
  configuration's directory) and against the file's base name, `*` and `?`
  match any characters (a `/` included), `**` matches any number of
  directories, `{a,b}` alternatives and `[...]` classes are understood. A
  per-file-ignores glob starting with `!` applies to the files it does *not*
  match. Exclusions are checked on every path component below the
  configuration's directory, so `exclude = ["generated"]` prunes any
  directory named `generated`.
* `respect-gitignore` (default true) skips what git ignores: the `.gitignore`
  files from the repository root (the nearest directory with a `.git`; when
  there is none, the configuration's directory) down to the file, deeper files
  taking precedence and `!` re-including, then `.git/info/exclude`.
"""

from __future__ import annotations

import difflib
import keyword
import os
import posixpath
import re
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Pattern, Sequence, Tuple, Union

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.9/3.10
    import tomli as tomllib  # type: ignore[no-redef]

from gradfix import rules as _rules
from gradfix.files import DEFAULT_EXCLUDES, SOURCE_SUFFIXES
from gradfix.options import DEFAULT_GRAD_SCALE_IMPORT, LintOptions
from gradfix.rules import SelectionError

__all__ = [
    "ConfigError",
    "Settings",
    "SettingsResolver",
    "default_settings",
    "discover_files",
    "iter_files",
    "load_settings",
    "parse_selectors",
]

INLINE_GRAD_SCALE = "inline"

KNOWN_KEYS = (
    "select",
    "extend-select",
    "ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "respect-gitignore",
    "unsafe-fixes",
    "grad-scale-import",
    "extend",
    "cache-dir",
)

# Configuration files looked for in each directory, in this order (ruff's `.ruff.toml`, `ruff.toml`,
# `pyproject.toml`): the first two are the table itself and always count; a pyproject.toml only with
# a [tool.gradfix] table.
CONFIG_FILES = (".gradfix.toml", "gradfix.toml", "pyproject.toml")

PathLike = Union[str, "os.PathLike[str]"]


class ConfigError(Exception):
    """An unreadable, malformed or invalid configuration file; `str()` is one line."""


# --------------------------------------------------------------------------- #
# Rule selectors
# --------------------------------------------------------------------------- #


def _normalize_selector(selector: str) -> str:
    return selector.strip().upper()


def _matching(selector: str) -> Tuple[str, ...]:
    """The codes a (normalized) selector names; empty when it names none."""
    if selector == "ALL":
        return tuple(r.CODE for r in _rules.ALL_RULES)
    if not selector:
        return ()
    return tuple(r.CODE for r in _rules.ALL_RULES if r.CODE.startswith(selector))


def _specificity(selector: str) -> int:
    # ALL < linter prefix (GF) < longer prefixes < a full code, as in ruff.
    return 0 if selector == "ALL" else len(selector)


def _apply_layer(
    current: frozenset,
    select: Optional[Sequence[str]],
    extend_select: Sequence[str],
    ignore: Sequence[str],
) -> frozenset:
    enabled = set() if select is not None else set(current)
    updates = [(_specificity(s), 0, s) for s in list(select or ()) + list(extend_select)]
    updates += [(_specificity(s), 1, s) for s in ignore]
    for _, is_ignore, selector in sorted(updates):
        codes = _matching(selector)
        if is_ignore:
            enabled.difference_update(codes)
        else:
            enabled.update(codes)
    return frozenset(enabled)


def parse_selectors(values: Optional[Iterable[str]]) -> Optional[Tuple[str, ...]]:
    """Normalize and validate command-line selectors, comma-separated values accepted.

    None stays None (no `--select` given). Raises `gradfix.rules.SelectionError`
    naming the first unknown selector: the CLI can call this up front, before any
    file is looked at.
    """
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    out = []
    for value in values:
        for part in value.split(","):
            selector = _normalize_selector(part)
            if not selector:
                continue
            if not _matching(selector):
                raise SelectionError(f"unknown rule selector `{selector}`")
            out.append(selector)
    return tuple(out)


def _enabled_codes(
    select: Optional[Tuple[str, ...]],
    extend_select: Tuple[str, ...],
    ignore: Tuple[str, ...],
    cli_select: Optional[Tuple[str, ...]],
    cli_extend_select: Tuple[str, ...],
    cli_ignore: Tuple[str, ...],
    base_layers: Sequence[Tuple[Optional[Tuple[str, ...]], Tuple[str, ...], Tuple[str, ...]]] = (),
) -> frozenset:
    enabled = frozenset(r.CODE for r in _rules.ALL_RULES if r.DEFAULT)
    for layer in base_layers:  # extended files, base first: ruff's layering
        enabled = _apply_layer(enabled, *layer)
    enabled = _apply_layer(enabled, select, extend_select, ignore)
    return _apply_layer(enabled, cli_select, cli_extend_select, cli_ignore)


# --------------------------------------------------------------------------- #
# Globs
# --------------------------------------------------------------------------- #


def _translate(glob: str) -> str:
    """A regular expression (unanchored) for a ruff-style glob."""
    out: List[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            j = i
            while j < n and glob[j] == "*":
                j += 1
            if j - i >= 2 and (i == 0 or glob[i - 1] == "/") and (j == n or glob[j] == "/"):
                if j == n:
                    out.append(".*")
                else:  # `**/`: zero or more directories
                    out.append("(?:.*/)?")
                    j += 1
            else:
                out.append(".*")
            i = j
            continue
        if c == "?":
            out.append(".")
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : j]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[{'^' if negate else ''}{body}]")
                i = j
        elif c == "{":
            j = glob.find("}", i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                alternatives = glob[i + 1 : j].split(",")
                out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _posix(path: str) -> str:
    return path if os.sep == "/" else path.replace(os.sep, "/")


def _posix_abspath(path: PathLike) -> str:
    return _posix(os.path.abspath(os.fspath(path)))


@dataclass(frozen=True)
class _Glob:
    pattern: str
    basename: Pattern[str]
    absolute: Pattern[str]

    def matches(self, abs_posix: str, name: str) -> bool:
        return bool(self.basename.fullmatch(name) or self.absolute.fullmatch(abs_posix))


@lru_cache(maxsize=1024)
def _compile_glob(pattern: str, root: str) -> _Glob:
    """Compile `pattern` relative to the absolute posix directory `root`."""
    basename, absolute = _glob_regexes(pattern, root)
    return _Glob(pattern, re.compile(basename, re.S), re.compile(absolute, re.S))


def _glob_regexes(pattern: str, root: str) -> Tuple[str, str]:
    """Regular expressions matching a base name and an absolute posix path for `pattern`."""
    raw = os.path.expanduser(pattern) if pattern.startswith("~") else pattern
    raw = raw.replace(os.sep, "/") if os.sep != "/" else raw
    stripped = raw.rstrip("/") or raw
    if posixpath.isabs(stripped) or re.match(r"^[A-Za-z]:/", stripped):
        absolute = _translate(posixpath.normpath(stripped))
    else:
        rel = stripped
        while rel.startswith("./"):
            rel = rel[2:]
        if ".." in rel.split("/") or rel in ("", "."):
            absolute = _translate(posixpath.normpath(posixpath.join(root, rel)))
        else:
            absolute = re.escape(root.rstrip("/")) + "/" + _translate(rel)
    return _translate(stripped), absolute


_DEFAULT_EXCLUDE_PATTERNS = tuple(sorted(DEFAULT_EXCLUDES))


@lru_cache(maxsize=256)
def _compile_globs(patterns: Tuple[str, ...], root: str) -> _Glob:
    """One glob matching where any of `patterns` does."""
    if not patterns:
        never = re.compile("(?!)")
        return _Glob("", never, never)
    pairs = [_glob_regexes(p, root) for p in patterns]
    basename = "|".join(f"(?:{b})" for b, _ in pairs)
    absolute = "|".join(f"(?:{a})" for _, a in pairs)
    return _Glob(",".join(patterns), re.compile(basename, re.S), re.compile(absolute, re.S))


# --------------------------------------------------------------------------- #
# gitignore
# --------------------------------------------------------------------------- #


@lru_cache(maxsize=4096)
def _repo_root(directory: str) -> Optional[str]:
    """The nearest directory at or above `directory` holding `.git` (a dir, or a file for worktrees)."""
    if os.path.exists(os.path.join(directory, ".git")):
        return directory
    parent = os.path.dirname(directory)
    if parent == directory:
        return None
    return _repo_root(parent)


@lru_cache(maxsize=4096)
def _ignore_spec(file: str):
    """The GitIgnoreSpec of one ignore file, or None when absent/unreadable/empty."""
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if spec.patterns else None


def _ignore_verdict(spec, rel: str, shield: Optional[str] = None) -> Optional[bool]:
    """True: ignored; False: re-included by a `!` pattern; None: no pattern matched.

    `shield` (a directory, relative to the spec's directory, ending in `/`) is a
    directory named explicitly on the command line although ignored: patterns
    that match it (and so, in pathspec, everything below it) are left out, so
    that only what is ignored in its own right is skipped inside it.
    """
    if shield is None:
        return spec.check_file(rel).include
    verdict = None
    for pattern in spec.patterns:
        if pattern.include is None or pattern.match_file(rel) is None:
            continue
        if pattern.match_file(shield) is not None:
            continue
        verdict = pattern.include
    return verdict


@lru_cache(maxsize=4096)
def _ignore_chain(parent: str, fallback_root: Optional[str]) -> Tuple[Tuple[Any, str], ...]:
    """The ignore specs that apply to entries of directory `parent`, lowest precedence
    first, each with the directory its patterns are relative to."""
    repo = _repo_root(parent)
    base = repo if repo is not None else fallback_root
    if base is None or not _is_within(parent, base):
        return ()
    rel = os.path.relpath(parent, base)
    parts = () if rel == "." else Path(rel).parts
    candidates: List[Tuple[str, str]] = []
    if repo is not None:
        candidates.append((os.path.join(repo, ".git", "info", "exclude"), repo))
    directory = base
    candidates.append((os.path.join(directory, ".gitignore"), directory))
    for part in parts:
        directory = os.path.join(directory, part)
        candidates.append((os.path.join(directory, ".gitignore"), directory))
    chain = []
    for ignore_file, directory in candidates:
        spec = _ignore_spec(ignore_file)
        if spec is not None:
            chain.append((spec, directory))
    return tuple(chain)


def clear_caches() -> None:
    """Forget the `.git` and ignore files read so far (a new SettingsResolver does this)."""
    _repo_root.cache_clear()
    _ignore_spec.cache_clear()
    _ignore_chain.cache_clear()


def _gitignored(abs_path: str, is_dir: bool, fallback_root: Optional[str], shield: Optional[str] = None) -> bool:
    """Whether git would ignore `abs_path` (its parent directories are not looked at,
    but pathspec lets a directory pattern match what is below the directory too;
    `shield` is an absolute directory whose own matches are left out, see
    `_ignore_verdict`)."""
    verdict: Optional[bool] = None
    suffix = "/" if is_dir else ""
    for spec, directory in _ignore_chain(os.path.dirname(abs_path), fallback_root):
        # `directory` is an ancestor of abs_path: the relative path is a suffix.
        rel = _posix(abs_path[len(directory):].lstrip(os.sep)) + suffix
        shield_rel = None
        if shield is not None and shield.startswith(directory.rstrip(os.sep) + os.sep):
            shield_rel = _posix(shield[len(directory):].lstrip(os.sep)) + "/"
        result = _ignore_verdict(spec, rel, shield_rel)
        if result is not None:  # deeper files override
            verdict = result
    return bool(verdict)


# --------------------------------------------------------------------------- #
# Settings
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Settings:
    root: Optional[Path]  # directory of the config file (None for defaults)
    source: Optional[Path]  # the config file
    select: Optional[Tuple[str, ...]] = None
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Optional[Tuple[str, ...]] = None
    extend_exclude: Tuple[str, ...] = ()
    respect_gitignore: bool = True
    unsafe_fixes: bool = False
    grad_scale_import: str = DEFAULT_GRAD_SCALE_IMPORT
    # From `extend`ed files (base first) and the command line. Globs stay relative to the
    # directory of the file that wrote them (the command line's: the current directory).
    base_layers: Tuple[Tuple[Optional[Tuple[str, ...]], Tuple[str, ...], Tuple[str, ...]], ...] = ()
    exclude_root: Optional[Path] = None  # where `exclude` came from, when not `root`
    per_file_ignores_root: Optional[Path] = None  # where `per_file_ignores` came from, when not `root`
    rooted_extend_exclude: Tuple[Tuple[str, str], ...] = ()  # (glob, absolute posix directory)
    cache_dir: Optional[Path] = None  # absolute
    extends: Tuple[Path, ...] = ()  # the extended files, nearest first

    # -- paths ------------------------------------------------------------- #

    def _root_posix(self) -> str:
        return _posix_abspath(self.root if self.root is not None else os.getcwd())

    def _exclusion_globs(self) -> Tuple[_Glob, ...]:
        if self.exclude is not None:
            exclude_root = _posix_abspath(self.exclude_root) if self.exclude_root is not None else self._root_posix()
            globs = [_compile_globs(self.exclude, exclude_root)]
        else:
            globs = [_compile_globs(_DEFAULT_EXCLUDE_PATTERNS, self._root_posix())]
        if self.extend_exclude:
            globs.append(_compile_globs(self.extend_exclude, self._root_posix()))
        by_root: Dict[str, List[str]] = {}
        for pattern, root in self.rooted_extend_exclude:
            by_root.setdefault(root, []).append(pattern)
        globs.extend(_compile_globs(tuple(patterns), root) for root, patterns in by_root.items())
        return tuple(globs)

    def _entry_excluded(self, path: PathLike, *, is_dir: bool, shield: Optional[str] = None) -> bool:
        """Whether this one path (not its parents) is excluded by globs or gitignore."""
        abs_path = os.path.abspath(os.fspath(path))
        abs_posix, name = _posix(abs_path), os.path.basename(abs_path)
        if any(glob.matches(abs_posix, name) for glob in self._exclusion_globs()):
            return True
        if self.respect_gitignore:
            root = str(self.root) if self.root is not None else None  # absolute, see load_settings
            return _gitignored(abs_path, is_dir, root, shield)
        return False

    def is_excluded(self, path: PathLike) -> bool:
        """Whether `path` or one of its parent directories (below the configuration's
        directory; the current directory for the defaults) is excluded by `exclude`,
        `extend-exclude` or, with `respect-gitignore`, by git."""
        abs_path = os.path.abspath(os.fspath(path))
        root = os.path.abspath(self.root) if self.root is not None else os.getcwd()
        if abs_path == root:
            return False  # the project directory itself is never excluded by its own settings
        entries = [abs_path]
        if _is_within(abs_path, root):
            parent = os.path.dirname(abs_path)
            while parent != root:
                entries.append(parent)
                parent = os.path.dirname(parent)
        for entry in reversed(entries):  # outermost first
            is_dir = entry != abs_path or os.path.isdir(abs_path)
            if self._entry_excluded(entry, is_dir=is_dir):
                return True
        return False

    # -- rules ------------------------------------------------------------- #

    def _per_file_ignored(self, path: PathLike) -> frozenset:
        if not self.per_file_ignores:
            return frozenset()
        abs_posix = _posix_abspath(path)
        name = os.path.basename(abs_posix)
        root = _posix_abspath(self.per_file_ignores_root) if self.per_file_ignores_root is not None else self._root_posix()
        codes = set()
        for pattern, selectors in self.per_file_ignores:
            negated = pattern.startswith("!")
            glob = _compile_glob(pattern[1:] if negated else pattern, root)
            if glob.matches(abs_posix, name) != negated:
                for selector in selectors:
                    codes.update(_matching(selector))
        return frozenset(codes)

    def rules_for(
        self,
        path: PathLike,
        *,
        cli_select: Optional[Iterable[str]] = None,
        cli_extend_select: Iterable[str] = (),
        cli_ignore: Iterable[str] = (),
    ) -> List[ModuleType]:
        """The rule modules to run on `path`, in registry order.

        Command-line selectors (`gradfix.rules.SelectionError` when unknown) form
        a layer over the configuration's: `cli_select` starts over, the
        extend/ignore ones add. Then the per-file ignores matching `path` are
        removed.
        """
        enabled = _enabled_codes(
            self.select,
            self.extend_select,
            self.ignore,
            parse_selectors(cli_select),
            parse_selectors(cli_extend_select) or (),
            parse_selectors(cli_ignore) or (),
            base_layers=self.base_layers,
        )
        removed = self._per_file_ignored(path)
        return [r for r in _rules.ALL_RULES if r.CODE in enabled and r.CODE not in removed]

    def lint_options(
        self,
        path: PathLike,
        *,
        fix: bool = False,
        unsafe_fixes: Optional[bool] = None,
        ignore_noqa: bool = False,
        grad_scale_import: Optional[str] = None,
        **selectors: Any,
    ) -> LintOptions:
        """The engine's options for `path`: the codes of the rules `rules_for(path, **selectors)`
        selects (`cli_select`, `cli_extend_select`, `cli_ignore`), and the flags as given;
        `unsafe_fixes` and `grad_scale_import` left None are this configuration's."""
        rules = self.rules_for(path, **selectors)
        return LintOptions(
            tuple(r.CODE for r in rules),
            fix=fix,
            unsafe_fixes=self.unsafe_fixes if unsafe_fixes is None else unsafe_fixes,
            ignore_noqa=ignore_noqa,
            grad_scale_import=self.grad_scale_import if grad_scale_import is None else grad_scale_import,
        )


def _is_within(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def default_settings() -> Settings:
    return Settings(root=None, source=None)


# --------------------------------------------------------------------------- #
# Loading and validation
# --------------------------------------------------------------------------- #


def _type_name(value: Any) -> str:
    return type(value).__name__


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class _Validator:
    def __init__(self, display: str) -> None:
        self.display = display

    def fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(_one_line(f"{self.display}: [tool.gradfix] {key}: {message}"))

    def strings(self, key: str, value: Any) -> Tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of strings, got {_type_name(value)}")
        for item in value:
            if not isinstance(item, str):
                raise self.fail(key, f"expected a list of strings, got a list containing {_type_name(item)}")
        return tuple(value)

    def selectors(self, key: str, value: Any) -> Tuple[str, ...]:
        out = []
        for raw in self.strings(key, value):
            selector = _normalize_selector(raw)
            if not _matching(selector):
                raise self.fail(key, f"unknown rule selector {raw.strip()!r}")
            out.append(selector)
        return tuple(out)

    def boolean(self, key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected a boolean, got {_type_name(value)}")
        return value

    def per_file_ignores(self, key: str, value: Any) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table of glob = [rule selectors], got {_type_name(value)}")
        out = []
        for pattern, selectors in value.items():
            if not isinstance(selectors, list) or not all(isinstance(s, str) for s in selectors):
                got = _type_name(selectors) if not isinstance(selectors, list) else "a list containing " + next(
                    _type_name(s) for s in selectors if not isinstance(s, str)
                )
                raise self.fail(key, f"{pattern!r}: expected a list of strings, got {got}")
            codes = []
            for raw in selectors:
                selector = _normalize_selector(raw)
                if not _matching(selector):
                    raise self.fail(key, f"{pattern!r}: unknown rule selector {raw.strip()!r}")
                codes.append(selector)
            out.append((pattern, tuple(codes)))
        return tuple(out)

    def grad_scale_import(self, key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {_type_name(value)}")
        if value == INLINE_GRAD_SCALE or _is_dotted_name(value):
            return value
        raise self.fail(key, f"expected \"inline\" or a dotted module path like \"mypkg.autograd\", got {value!r}")


def _is_dotted_name(value: str) -> bool:
    parts = value.split(".")
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in parts)


def _display(path: Path) -> str:
    """`path` relative to the current directory when it is below it, else absolute."""
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    if _is_within(absolute, cwd) and absolute != cwd:
        return os.path.relpath(absolute, cwd)
    return absolute


def _read_toml(path: Path, display: str) -> Dict[str, Any]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(_one_line(f"{display}: cannot read: {exc.strerror or exc}")) from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(_one_line(f"{display}: invalid TOML: not UTF-8 ({exc.reason})")) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_one_line(f"{display}: invalid TOML: {exc}")) from None


def _gradfix_table(document: Mapping[str, Any], *, top_level_fallback: bool) -> Optional[Mapping[str, Any]]:
    tool = document.get("tool")
    if isinstance(tool, dict) and "gradfix" in tool:
        return tool["gradfix"]
    return document if top_level_fallback else None


def _validated(table: Any, display: str) -> Dict[str, Any]:
    """The checked values of one file's table, by key."""
    check = _Validator(display)
    if not isinstance(table, dict):
        raise ConfigError(f"{display}: [tool.gradfix] must be a table, got {_type_name(table)}")
    values: Dict[str, Any] = {}
    for key, value in table.items():
        if key not in KNOWN_KEYS:
            close = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
            if not close and "_" in key and key.replace("_", "-") in KNOWN_KEYS:
                close = [key.replace("_", "-")]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise check.fail(key, f"unknown key{hint}")
        if key in ("select", "extend-select", "ignore"):
            values[key] = check.selectors(key, value)
        elif key in ("exclude", "extend-exclude"):
            values[key] = check.strings(key, value)
        elif key == "per-file-ignores":
            values[key] = check.per_file_ignores(key, value)
        elif key in ("respect-gitignore", "unsafe-fixes"):
            values[key] = check.boolean(key, value)
        elif key == "grad-scale-import":
            values[key] = check.grad_scale_import(key, value)
        elif key in ("extend", "cache-dir"):
            if not isinstance(value, str) or not value.strip():
                raise check.fail(key, f"expected a path, got {_type_name(value) if not isinstance(value, str) else 'an empty string'}")
            values[key] = value
    return values


def _expand(value: str, directory: Path) -> Path:
    """A path from a configuration file: `~` and `$VARS` expanded, relative to the file's directory."""
    return Path(os.path.abspath(os.path.join(directory, os.path.expandvars(os.path.expanduser(value)))))


def _chain(values: Dict[str, Any], path: Path, display: str, seen: Tuple[str, ...] = ()) -> List[Tuple[Dict[str, Any], Path]]:
    """The files a configuration `extend`s, base first, ending with (values, path) itself."""
    absolute = Path(os.path.abspath(path))
    if "extend" not in values:
        return [(values, absolute)]
    check = _Validator(display)
    base = _expand(values["extend"], absolute.parent)
    if str(base) in seen + (str(absolute),):
        cycle = " -> ".join(_display(Path(p)) for p in seen + (str(absolute), str(base)))
        raise check.fail("extend", f"circular extend ({cycle})")
    if not base.is_file():
        raise check.fail("extend", f"{values['extend']}: no such file")
    base_display = _display(base)
    document = _read_toml(base, base_display)
    table = _gradfix_table(document, top_level_fallback=base.name != "pyproject.toml")
    base_values = _validated({} if table is None else table, base_display)
    return _chain(base_values, base, base_display, seen + (str(absolute),)) + [(values, absolute)]


def _settings_from_chain(chain: List[Tuple[Dict[str, Any], Path]]) -> Settings:
    """Settings from a file and the files it extends (base first): the extending file's keys override,
    `extend-exclude` and rule selection accumulate (a `select` starts over, as in ruff)."""
    *bases, (own, path) = chain
    merged: Dict[str, Any] = {}
    roots: Dict[str, Path] = {}
    rooted_extend_exclude: List[Tuple[str, str]] = []
    base_layers = []
    for values, source in bases:
        directory = source.parent
        for key in ("respect-gitignore", "unsafe-fixes", "grad-scale-import", "exclude", "per-file-ignores", "cache-dir"):
            if key in values:
                merged[key], roots[key] = values[key], directory
        rooted_extend_exclude += [(glob, _posix_abspath(directory)) for glob in values.get("extend-exclude", ())]
        if any(key in values for key in ("select", "extend-select", "ignore")):
            base_layers.append((values.get("select"), values.get("extend-select", ()), values.get("ignore", ())))
    for key, value in own.items():
        if key != "extend":
            merged[key], roots[key] = value, path.parent
    cache_dir = _expand(merged["cache-dir"], roots["cache-dir"]) if "cache-dir" in merged else None
    exclude_root = roots.get("exclude") if roots.get("exclude") != path.parent else None
    pfi_root = roots.get("per-file-ignores") if roots.get("per-file-ignores") != path.parent else None
    return Settings(
        root=path.parent,
        source=path,
        select=own.get("select"),
        extend_select=own.get("extend-select", ()),
        ignore=own.get("ignore", ()),
        per_file_ignores=merged.get("per-file-ignores", ()),
        exclude=merged.get("exclude"),
        extend_exclude=own.get("extend-exclude", ()),
        respect_gitignore=merged.get("respect-gitignore", True),
        unsafe_fixes=merged.get("unsafe-fixes", False),
        grad_scale_import=merged.get("grad-scale-import", DEFAULT_GRAD_SCALE_IMPORT),
        base_layers=tuple(base_layers),
        exclude_root=exclude_root,
        per_file_ignores_root=pfi_root,
        rooted_extend_exclude=tuple(rooted_extend_exclude),
        cache_dir=cache_dir,
        extends=tuple(source for _, source in reversed(bases)),
    )


def _settings_from_table(table: Any, path: Path, display: str) -> Settings:
    return _settings_from_chain(_chain(_validated(table, display), path, display))


def load_settings(path: PathLike) -> Settings:
    """Parse and validate one configuration file (and the files it `extend`s).

    A file with a `[tool.gradfix]` table uses that table; any other file (a
    `gradfix.toml`) is the table itself, so a `pyproject.toml` without the
    table yields the defaults rooted at its directory.
    """
    path = Path(path)
    display = str(path)
    document = _read_toml(path, display)
    table = _gradfix_table(document, top_level_fallback=path.name != "pyproject.toml")
    return _settings_from_table({} if table is None else table, path, display)


def _discovered_settings(config_file: Path) -> Optional[Settings]:
    """The settings of a discovered configuration file; None for a pyproject.toml without [tool.gradfix]
    (a `gradfix.toml` / `.gradfix.toml` is the table itself and always counts, even empty)."""
    display = _display(config_file)
    try:
        data = config_file.read_bytes()
    except OSError as exc:
        raise ConfigError(_one_line(f"{display}: cannot read: {exc.strerror or exc}")) from None
    is_pyproject = config_file.name == "pyproject.toml"
    if is_pyproject and b"gradfix" not in data:  # cheap: most pyprojects say nothing about gradfix
        return None
    document = _read_toml(config_file, display)
    table = _gradfix_table(document, top_level_fallback=not is_pyproject)
    if table is None:
        return None
    return _settings_from_table(table, config_file, display)


# --------------------------------------------------------------------------- #
# Resolution
# --------------------------------------------------------------------------- #


class SettingsResolver:
    """Which settings apply to which file: the explicit `config`, the defaults when
    `isolated`, else the nearest `pyproject.toml` with `[tool.gradfix]`."""

    def __init__(
        self,
        *,
        config: Optional[PathLike] = None,
        isolated: bool = False,
        exclude: Optional[Sequence[str]] = None,
        extend_exclude: Sequence[str] = (),
    ) -> None:
        """`exclude` / `extend_exclude`: the command line's `--exclude` (replaces every configuration's
        `exclude`) and `--extend-exclude` (added to it), globs relative to the current directory."""
        clear_caches()  # a new run sees the ignore files as they are now
        cwd = Path(os.getcwd())
        self._cli_exclude = tuple(exclude) if exclude is not None else None
        self._cli_extend_exclude = tuple((glob, _posix_abspath(cwd)) for glob in extend_exclude)
        self._cwd = cwd
        self._default = self._with_cli(default_settings())
        self._fixed: Optional[Settings] = None
        if isolated:
            self._fixed = self._default
        elif config is not None:
            self._fixed = self._with_cli(load_settings(config))
        self._by_dir: Dict[str, Settings] = {}

    def _with_cli(self, settings: Settings) -> Settings:
        if self._cli_exclude is None and not self._cli_extend_exclude:
            return settings
        import dataclasses

        changes: Dict[str, Any] = {"rooted_extend_exclude": settings.rooted_extend_exclude + self._cli_extend_exclude}
        if self._cli_exclude is not None:
            changes.update(exclude=self._cli_exclude, exclude_root=self._cwd)
        return dataclasses.replace(settings, **changes)

    def for_path(self, path: PathLike) -> Settings:
        """The settings for a file (or directory) `path`: searched from its parent directory up."""
        if self._fixed is not None:
            return self._fixed
        return self._for_directory(os.path.dirname(os.path.abspath(os.fspath(path))))

    def for_directory(self, directory: PathLike) -> Settings:
        """The settings that apply to the files directly in `directory`."""
        if self._fixed is not None:
            return self._fixed
        return self._for_directory(os.path.abspath(os.fspath(directory)))

    def _for_directory(self, directory: str) -> Settings:
        visited = []
        current = directory
        while True:
            cached = self._by_dir.get(current)
            if cached is not None:
                found = cached
                break
            visited.append(current)
            settings = None
            for name in CONFIG_FILES:  # .gradfix.toml, then gradfix.toml, then pyproject.toml
                candidate = os.path.join(current, name)
                if os.path.isfile(candidate):
                    settings = _discovered_settings(Path(candidate))
                    if settings is not None:
                        break
            if settings is not None:
                found = self._with_cli(settings)
                break
            parent = os.path.dirname(current)
            if parent == current:
                found = self._default
                break
            current = parent
        for visited_dir in visited:
            self._by_dir[visited_dir] = found
        return found


# --------------------------------------------------------------------------- #
# File discovery
# --------------------------------------------------------------------------- #


def discover_files(
    paths: Iterable[PathLike],
    resolver: SettingsResolver,
    *,
    force_exclude: bool = False,
) -> Tuple[List[Path], List[Tuple[str, str]]]:
    """Expand path arguments into a sorted list of Python files, honouring each
    file's settings (`exclude`, `extend-exclude`, `respect-gitignore`).

    Like `gradfix.files.discover`: returns (files, problems), problems being
    (path, message) for arguments that do not exist; directory symlinks are
    never followed. Paths named explicitly (files, and the directories walked
    from) are checked even when excluded, unless `force_exclude`. Raises
    ConfigError for a broken configuration file met on the way.
    """
    problems: List[Tuple[str, str]] = []
    found = {path for raw in paths for path in _discover_one(raw, resolver, force_exclude, problems)}
    return sorted(found, key=str), problems


def iter_files(
    paths: Sequence[PathLike],
    resolver: SettingsResolver,
    problems: List[Tuple[str, str]],
    *,
    force_exclude: bool = False,
) -> Iterator[Path]:
    """`discover_files`' files in its order, yielded as they are found (its problems appended to
    `problems`): one directory is walked in the order its files sort in (`_walk`), so the caller
    reads the first file at once, not after the whole listing (a sixth of a second on a tree of
    3,000 files, during which the workers could not start: stop 35). Several arguments are listed
    in full first: only their sorted union has their order."""
    if len(paths) != 1:
        files, found_problems = discover_files(paths, resolver, force_exclude=force_exclude)
        problems.extend(found_problems)
        yield from files
        return
    yield from _discover_one(paths[0], resolver, force_exclude, problems)


def _discover_one(raw: PathLike, resolver: SettingsResolver, force_exclude: bool,
                  problems: List[Tuple[str, str]]) -> Iterator[Path]:
    """The files one path argument names, in the order of their `str` (`_walk`'s for a directory)."""
    raw = os.fspath(raw)
    path = Path(raw)
    # os.stat / os.lstat, never Path.exists: a path below an unreadable directory raises
    # PermissionError there, which must be one line for this path, not the end of the run.
    try:
        st = os.stat(raw)
    except FileNotFoundError:
        if os.path.islink(raw):
            yield path  # a dangling link: reported when it is read
        else:
            problems.append((raw, "No such file or directory"))
        return
    except OSError as exc:
        if os.path.islink(raw):
            yield path  # a link loop: reported when it is read
        else:
            problems.append((raw, f"cannot read: {exc.strerror or exc}"))
        return
    if force_exclude and resolver.for_path(path).is_excluded(path):
        return
    if stat.S_ISDIR(st.st_mode):
        yield from _walk(path, resolver, _shield(path, resolver), problems)
    elif stat.S_ISREG(st.st_mode):
        yield path
    else:
        # A FIFO would block the read, /dev/zero (or a link to it) would never end it.
        problems.append((raw, "not a regular file"))


def _shield(directory: Path, resolver: SettingsResolver) -> Optional[str]:
    """`directory` (absolute) when it is itself gitignored, else None: walking a directory
    named explicitly, what pathspec would call ignored only because of it is checked."""
    settings = resolver.for_path(directory)
    absolute = os.path.abspath(directory)
    root = os.path.abspath(settings.root) if settings.root is not None else None
    return absolute if _gitignored(absolute, True, root) else None


def _walk(root: Path, resolver: SettingsResolver, shield: Optional[str] = None,
          problems: Optional[List[Tuple[str, str]]] = None) -> Iterator[Path]:
    """The source files under `root` its settings keep, as they are found, in the order of their
    `str`: a directory's entries are taken in the order of their names, with a `/` after a
    subdirectory's. Every path yielded is `root`, then names joined by `/`, so that is the sorted
    order of the whole paths (`a.py` < `a/b.py` < `a_b.py`). Directory symlinks are never
    followed; a directory that cannot be listed is one problem, never skipped silently."""
    # (directory's absolute path, its spelling from `root`, its settings, its entries still to take)
    stack: List[Tuple[str, str, "Settings", Iterator[Tuple[str, str, bool]]]] = []

    def enter(spelled: str) -> None:
        try:
            # (by its spelling from `root`, as os.walk lists it: a problem names the path as given)
            with os.scandir(spelled) as listing:
                entries = list(listing)
        except OSError as exc:
            if problems is not None:
                problems.append((exc.filename or spelled, f"cannot read directory: {exc.strerror or exc}"))
            return
        absolute = os.path.abspath(spelled)
        keyed = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # (a link to a directory too: os.walk lists it with them)
            except OSError:
                is_dir = False
            keyed.append((entry.name + "/" if is_dir else entry.name, entry.name, is_dir))
        keyed.sort()
        # (the settings for the entries directly in the directory)
        stack.append((absolute, spelled, resolver.for_directory(absolute), iter(keyed)))

    enter(str(root))  # (Path's spelling: `./src/` is `src`)
    while stack:
        absolute, spelled, settings, todo = stack[-1]
        step = next(todo, None)
        if step is None:
            stack.pop()
            continue
        _, name, is_dir = step
        full = os.path.join(absolute, name)
        if is_dir:
            if os.path.islink(full):
                continue  # never followed (os.walk does not descend either)
            if not settings._entry_excluded(full, is_dir=True, shield=shield):
                enter(os.path.join(spelled, name))
            continue
        if not name.endswith(SOURCE_SUFFIXES):
            continue
        # A FIFO or socket named `*.py` would block on read: regular files
        # only, plus dangling or looping links, which get a read error.
        if os.path.isfile(full) or (os.path.islink(full) and not os.path.exists(full)):
            if not settings._entry_excluded(full, is_dir=False, shield=shield):
                yield Path(spelled, name)
        elif problems is not None and not os.path.isdir(full):
            # A FIFO, a socket or a link to a device named like a source file: one line, never read.
            if not settings._entry_excluded(full, is_dir=False, shield=shield):
                problems.append((str(Path(spelled, name)), "not a regular file"))

