"""Runs over paths: what `gradfix check`, `fix` and `verify` do between parsing their options and
printing, available to Python as `gradfix.api.lint_paths`.

`lint_paths(paths, RunOptions(...), fix=...)` walks the paths (directories with
the configured excludes and `.gitignore`; `-` is standard input), gives each file the options of
its nearest configuration with the run's selection on top (`gradfix.config.Settings.lint_options`),
lints them in worker processes through the result cache (`gradfix.parallel.lint_many`, handed the
files as they are read, so the workers start before the last is), lints a
notebook's code cells as one source and maps findings and fixes back to its cells, and returns a
`Run`: an `Outcome` per file checked (its bytes as read and its `FileResult`, the fixed bytes
included for a fix run), and the (path, message) of every file that could not be checked, in the
order the files were found. `Outcome.diff()` is a fix as a unified diff, `Outcome.write_fix()`
writes it over the file (only if the file still holds what was read).

A bad selector raises `gradfix.rules.SelectionError` (a `ValueError`), a configuration problem
`gradfix.config.ConfigError`, both with a one-line message; problems with single files are in the
`Run`. Nothing here prints: the caller reports, and may pass `progress` (see
`gradfix.progress.tracked`) to show the results as they arrive.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from gradfix.engine import FileResult

STDIN = "-"

PathLike = Union[str, "os.PathLike[str]"]
# progress(results, total): a context manager giving `results` back (counted, drawn...) and
# closing them when the block ends; `gradfix.progress.tracked` is the command line's.
Progress = Callable[[Iterator[FileResult], int], ContextManager[Iterator[FileResult]]]


@dataclass(frozen=True)
class RunOptions:
    """The options of a run over paths: the command line's for `check`, `fix` and `verify`.

    The selection (`select`, `extend_select`, `ignore`: codes, prefixes or "ALL", comma-separated
    values accepted) is a layer over each file's configuration, as on the command line;
    `unsafe_fixes` and `grad_scale_import` left None are each file's configuration's. `config`
    names one configuration file for every file, `isolated` ignores configuration files;
    `exclude` replaces the configured excludes, `extend_exclude` adds to them, `force_exclude`
    applies them to paths named explicitly too; `stdin_filename` names standard input (`-`) for
    configuration and messages. `jobs`: worker processes (None: one per core); `no_cache`: neither
    read nor write the result cache.
    """

    select: Optional[Sequence[str]] = None
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    config: Optional[str] = None
    isolated: bool = False
    force_exclude: bool = False
    ignore_noqa: bool = False
    stdin_filename: Optional[str] = None
    unsafe_fixes: Optional[bool] = None
    grad_scale_import: Optional[str] = None
    jobs: Optional[int] = None
    no_cache: bool = False
    exclude: Optional[Sequence[str]] = None
    extend_exclude: Tuple[str, ...] = ()


@dataclass
class Outcome:
    """One file checked: its name, its bytes as read, and the engine's result for them."""

    path: str
    original: bytes
    result: FileResult
    unsafe_fixes: bool = False  # unsafe fixes were offered (and, in a fix run, applied)
    notebook: object = None  # gradfix.notebook.Notebook for a .ipynb file (result positions are then per cell)

    def diff(self) -> str:
        """The unified diff of the fix (`result.fixed` must be set); a notebook's per changed cell
        (`--- nb.ipynb:cell 3`, as ruff)."""
        from gradfix.files import lines_with_ends

        notebook = self.notebook
        if notebook is None:
            before, after = decode(self.original), decode(self.result.fixed)
            lines = difflib.unified_diff(lines_with_ends(before), lines_with_ends(after), fromfile=self.path, tofile=self.path)
            return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        out = []
        for cell in notebook.cells:
            if cell.changed and cell.text() != cell.original:
                label = f"{self.path}:cell {cell.index}"
                lines = difflib.unified_diff(lines_with_ends(cell.original), lines_with_ends(cell.text()), fromfile=label, tofile=label)
                out.append("".join(line if line.endswith("\n") else line + "\n\\ No newline at end of cell\n" for line in lines))
        return "".join(out)

    def texts(self) -> Tuple[str, str]:
        """The source before and after the fix (`result.fixed` must be set), as text; a notebook's
        code cells concatenated, its IPython-only lines as `None` (what `gradfix verify` runs)."""
        if self.notebook is not None:
            return self.notebook.script(original=True), self.notebook.script()
        return decode(self.original), decode(self.result.fixed)

    def write_fix(self) -> Optional[str]:
        """Write the fixed bytes over the file; None when written, else the one line saying why not.

        Re-checked right before the rename: a file edited since it was read, one the user could
        not write in place, or one with other hard links is left alone."""
        from gradfix.files import NotReplaced, replace_file

        try:
            replace_file(Path(self.path), self.result.fixed, original=self.original)
        except NotReplaced as exc:
            return f"{self.path}: {exc}"
        except OSError as exc:
            return f"{self.path}: cannot write: {exc.strerror or exc}; file left unchanged"
        return None


@dataclass
class Run:
    outcomes: List[Outcome] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, message): files not checked

    def sources(self) -> Dict[str, str]:
        """Source text per path of the files with findings, for the renderers
        (`gradfix.output.render`'s `sources`); a notebook's per cell, keyed `path:cell N`."""
        out: Dict[str, str] = {}
        for o in self.outcomes:
            if not o.result.findings:
                continue
            if o.notebook is not None:
                out.update({f"{o.path}:cell {cell.index}": cell.original for cell in o.notebook.cells})
            else:
                out[o.path] = decode(o.original)
        return out


def decode(data: bytes) -> str:
    """A source file's text: its declared encoding (PEP 263), else UTF-8 with replacement characters."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace")


def lint_paths(
    paths: Sequence[PathLike],
    options: RunOptions = RunOptions(),
    *,
    fix: bool = False,
    stdin: Optional[bytes] = None,
    progress: Optional[Progress] = None,
) -> Run:
    """Lint the files under `paths` (see the module documentation); `fix` computes the fixed
    bytes (every finding's fix carries its text edits either way). `paths == ["-"]` lints `stdin`
    (standard input's bytes when None)."""
    from gradfix.cache import Cache
    from gradfix.config import ConfigError, SettingsResolver, iter_files
    from gradfix.files import NotRegularFile, read_source, restore_final_cr
    from gradfix.notebook import Notebook, NotebookError, is_notebook
    from gradfix.parallel import Task, lint_many, lint_task
    from gradfix.rules import SelectionError
    from gradfix.rules import select as choose

    run = Run()
    problems: List[Tuple[str, str]] = []  # (what the walk could not read: none from standard input)
    # Bad selectors are the caller's error, whatever the files: raised before any is looked at.
    choose(options.select, (*options.extend_select, *options.ignore))
    resolver = SettingsResolver(
        config=Path(options.config) if options.config else None,
        isolated=options.isolated,
        exclude=options.exclude,
        extend_exclude=options.extend_exclude,
    )

    # In file order: ("error", name, message), ("task", name, data, unsafe) or
    # ("notebook", name, data, unsafe, notebook, relint).
    entries: List[tuple] = []

    def add(name: str, data: bytes, settings_path: Path) -> Optional[Task]:
        """The file's task (its entry added), or None (an error entry added)."""
        notebook = is_notebook(name)
        try:
            settings = resolver.for_path(settings_path)
            # A notebook is linted as its code cells' concatenation; each fix's edits say which
            # cells it touches, and the fixes are applied cell by cell afterwards.
            lint_options = settings.lint_options(
                settings_path,
                cli_select=options.select,
                cli_extend_select=options.extend_select,
                cli_ignore=options.ignore,
                fix=fix and not notebook,
                unsafe_fixes=options.unsafe_fixes,
                ignore_noqa=options.ignore_noqa,
                grad_scale_import=options.grad_scale_import,
            )
        except (ConfigError, SelectionError) as exc:
            raise ConfigError(str(exc)) from None
        unsafe = lint_options.unsafe_fixes
        if notebook:
            try:
                parsed = Notebook.parse(data, name)
            except NotebookError as exc:
                entries.append(("error", name, f"not a valid notebook: {exc}"))
                return None
            entries.append(("notebook", name, data, unsafe, parsed, lambda source: lint_task(Task(name, source, lint_options))))
            return Task(name, parsed.source(), lint_options)
        entries.append(("task", name, data, unsafe))
        return Task(name, data, lint_options)

    def finish(tasks: Iterable[Task]) -> Run:
        cache = None if options.no_cache else Cache(_cache_directory(resolver))
        # `tasks` may read the files as it goes: the workers start on the first ones meanwhile.
        results = lint_many(options.jobs, tasks, cache=cache)
        run.errors.extend(problems)  # (all found: `lint_many` has taken every task)
        total = sum(entry[0] != "error" for entry in entries)
        with (progress or _untracked)(results, total) as results:
            for entry in entries:
                if entry[0] == "error":
                    run.errors.append((entry[1], entry[2]))
                    continue
                name, data, unsafe = entry[1:4]
                result = next(results)
                notebook = None
                if entry[0] == "notebook":
                    notebook, relint = entry[4:6]
                    result = _notebook_result(notebook, name, result, fix=fix, unsafe_fixes=unsafe, relint=relint)
                if result.error:
                    run.errors.append((name, result.error))
                elif result.fixed is not None and notebook is None:
                    result.fixed = restore_final_cr(data, result.fixed)
                run.outcomes.append(Outcome(name, data, result, unsafe, notebook))
        return run

    if list(paths) == [STDIN]:
        data = stdin if stdin is not None else sys.stdin.buffer.read()
        name = options.stdin_filename or STDIN
        if options.stdin_filename:
            if resolver.for_path(Path(name)).is_excluded(Path(name)) and options.force_exclude:
                run.outcomes.append(Outcome(name, data, FileResult(name)))
                return run
        task = add(name, data, Path(name) if options.stdin_filename else Path.cwd() / "stdin.py")
        return finish([task] if task is not None else [])

    # The files are read as the walk finds them (`iter_files`); its problems (a missing argument, a
    # directory that cannot be listed) come first in the errors, as when the listing came first.
    files = iter_files(list(paths), resolver, problems, force_exclude=options.force_exclude)

    def read() -> Iterator[Task]:
        for path in files:
            name = str(path)
            try:
                data = read_source(path)
            except IsADirectoryError:
                entries.append(("error", name, "is a directory"))
                continue
            except NotRegularFile:
                entries.append(("error", name, "not a regular file"))
                continue
            except OSError as exc:
                entries.append(("error", name, f"cannot read: {exc.strerror or exc}"))
                continue
            task = add(name, data, path)
            if task is not None:
                yield task

    return finish(read())


@contextlib.contextmanager
def _untracked(results: Iterator[FileResult], total: int) -> Iterator[Iterator[FileResult]]:
    """`results` as they come, closed when the block ends (a worker pool shuts down there)."""
    try:
        yield results
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()


def _cache_directory(resolver) -> Optional[Path]:
    """`$GRADFIX_CACHE_DIR`, else the `cache-dir` of the configuration for the current directory
    (or `--config`'s), else None (the default, `.gradfix_cache`), as ruff's RUFF_CACHE_DIR / cache-dir."""
    from gradfix.cache import ENV_DIR
    from gradfix.config import ConfigError

    if os.environ.get(ENV_DIR):
        return None  # gradfix.cache reads it
    try:
        return resolver.for_directory(Path.cwd()).cache_dir
    except ConfigError:  # reported for the files it governs
        return None


def _notebook_result(notebook, name: str, result: FileResult, *, fix: bool, unsafe_fixes: bool, relint) -> FileResult:
    """The engine's result on a notebook's concatenated cells, in cell positions; with `fix`, the fixed notebook."""
    out = FileResult(name, suppressed=result.suppressed)
    if result.error:
        out.error = result.error if result.error.startswith("internal error") else notebook.map_error(result.error)
        return out
    out.findings = [notebook.map_finding(f) for f in result.findings]
    out.remaining = list(out.findings)
    if not fix:
        return out
    applied, last = notebook.fix(result, relint, unsafe_fixes=unsafe_fixes)
    if last.error:  # pragma: no cover - a rewrite that does not parse is a gradfix bug
        return FileResult(name, findings=out.findings, remaining=out.findings,
                          error=f"internal error: the fixed cells do not parse ({notebook.map_error(last.error)}); file left unchanged")
    if applied:
        try:
            out.fixed = notebook.dumps()
        except (RuntimeError, ValueError, KeyError) as exc:  # pragma: no cover - a gradfix bug
            return FileResult(name, findings=out.findings, remaining=out.findings,
                              error=f"internal error: {exc}; file left unchanged")
    out.applied = len(applied)
    out.fixed_findings = applied
    out.remaining = [notebook.map_finding(f) for f in last.findings]
    return out


__all__ = ["Outcome", "Run", "RunOptions", "STDIN", "decode", "lint_paths"]
