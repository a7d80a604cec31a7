"""The `gradfix` command line: check, fix, verify, rule, server.

Exit codes (docs/design.md §4): 0 clean (or everything fixed), 1 findings remain (or
`verify` found a mismatch), 2 usage, configuration, input or internal error.

Only `verify` imports torch, and only when it runs; `check` and `fix` never
execute user code.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, TextIO, Tuple

import click

from gradfix import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN = "-"
# A progress bar is worth drawing only for runs of this many files, and only
# when stderr is a terminal (see _progress).
PROGRESS_THRESHOLD = 200


class OutputProblem(click.ClickException):
    """Standard output or `-o` could not be written (a full disk, a missing directory): one line, exit 2."""

    exit_code = EXIT_ERROR

    def show(self, file=None) -> None:
        click.echo(f"gradfix: {self.format_message()}", err=True)


def _silence_stdout() -> None:
    """After a failed write, point standard output at /dev/null, so that the flush at exit
    does not fail again with Python's `Exception ignored` message."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # not a real file (tests' CliRunner)
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:  # pragma: no cover
        pass


def _echo(text: str = "", nl: bool = True) -> None:
    """`click.echo` to standard output; a write error (ENOSPC, EIO, EPIPE) is one line, exit 2."""
    try:
        click.echo(text, nl=nl)
    except OSError as exc:
        _silence_stdout()
        raise OutputProblem(f"cannot write to standard output: {exc.strerror or exc}") from None


def _echo_bytes(data: bytes) -> None:
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except OSError as exc:
        _silence_stdout()
        raise OutputProblem(f"cannot write to standard output: {exc.strerror or exc}") from None


class ConfigProblem(click.ClickException):
    """A configuration error: one line naming the file and key, exit 2."""

    exit_code = EXIT_ERROR

    def show(self, file=None) -> None:
        click.echo(f"gradfix: {self.format_message()}", err=True)


def _split_codes(values: Sequence[str]) -> Optional[List[str]]:
    if not values:
        return None
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def _decode(data: bytes) -> str:
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace")


def _diff(path: str, original: bytes, fixed: bytes) -> str:
    from gradfix.files import lines_with_ends

    before, after = _decode(original), _decode(fixed)
    lines = difflib.unified_diff(lines_with_ends(before), lines_with_ends(after), fromfile=path, tofile=path)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _outcome_diff(outcome) -> str:
    """The unified diff of an outcome's fix; a notebook's per changed cell (`--- nb.ipynb:cell 3`, as ruff)."""
    notebook = outcome.notebook
    if notebook is None:
        return _diff(outcome.path, outcome.original, outcome.result.fixed)
    from gradfix.files import lines_with_ends

    out = []
    for cell in notebook.cells:
        if cell.changed and cell.text() != cell.original:
            label = f"{outcome.path}:cell {cell.index}"
            lines = difflib.unified_diff(lines_with_ends(cell.original), lines_with_ends(cell.text()), fromfile=label, tofile=label)
            out.append("".join(line if line.endswith("\n") else line + "\n\\ No newline at end of cell\n" for line in lines))
    return "".join(out)


def _sources(outcomes) -> dict:
    """Source text per path for the renderers; a notebook's per cell, keyed `path:cell N`."""
    sources = {}
    for o in outcomes:
        if not o.result.findings:
            continue
        if o.notebook is not None:
            sources.update({f"{o.path}:cell {cell.index}": cell.original for cell in o.notebook.cells})
        else:
            sources[o.path] = _decode(o.original)
    return sources


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _use_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


# --- the shared run over files -------------------------------------------------


@dataclass
class Options:
    select: Optional[List[str]] = None
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    config: Optional[str] = None
    isolated: bool = False
    force_exclude: bool = False
    ignore_noqa: bool = False
    stdin_filename: Optional[str] = None
    unsafe_fixes: Optional[bool] = None  # None: from the configuration
    jobs: Optional[int] = None  # worker processes; None: one per core (gradfix.parallel.default_jobs)
    no_cache: bool = False
    exclude: Optional[List[str]] = None  # --exclude: replaces the configured `exclude`
    extend_exclude: Tuple[str, ...] = ()  # --extend-exclude
    stdin_data: Optional[bytes] = None  # `-`'s bytes when the caller read them already


@dataclass
class Outcome:
    path: str
    original: bytes
    result: object  # gradfix.engine.FileResult
    unsafe_fixes: bool = False
    notebook: object = None  # gradfix.notebook.Notebook for a .ipynb file (result positions are then per cell)


@dataclass
class Run:
    outcomes: List[Outcome] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)


def _run(paths: Sequence[str], options: Options, *, fix: bool, with_edits: bool = False) -> Run:
    from gradfix.cache import Cache
    from gradfix.config import ConfigError, SettingsResolver, discover_files
    from gradfix.files import NotRegularFile, read_source, restore_final_cr
    from gradfix.notebook import Notebook, NotebookError, is_notebook
    from gradfix.parallel import lint_many
    from gradfix.rules import SelectionError

    run = Run()
    # Bad selectors on the command line are usage errors, whatever the files.
    try:
        from gradfix.rules import select as choose

        choose(options.select, (*options.extend_select, *options.ignore))
    except SelectionError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        resolver = SettingsResolver(
            config=Path(options.config) if options.config else None,
            isolated=options.isolated,
            exclude=options.exclude,
            extend_exclude=options.extend_exclude,
        )
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None

    # In file order: ("error", name, message) or ("task", name, data, unsafe).
    entries: List[tuple] = []
    tasks = []

    def add(name: str, data: bytes, settings_path: Path) -> None:
        try:
            settings = resolver.for_path(settings_path)
            rules = settings.rules_for(
                settings_path,
                cli_select=options.select,
                cli_extend_select=options.extend_select,
                cli_ignore=options.ignore,
            )
        except (ConfigError, SelectionError) as exc:
            raise ConfigProblem(str(exc)) from None
        unsafe = settings.unsafe_fixes if options.unsafe_fixes is None else options.unsafe_fixes
        codes = [r.CODE for r in rules]
        if is_notebook(name):
            # A notebook is linted as its code cells' concatenation, always with each fix's edits:
            # they say which cells a fix touches, and the fixes are applied cell by cell afterwards.
            try:
                notebook = Notebook.parse(data, name)
            except NotebookError as exc:
                entries.append(("error", name, f"not a valid notebook: {exc}"))
                return
            relint = functools.partial(
                _relint, name, codes, ignore_noqa=options.ignore_noqa, grad_scale_import=settings.grad_scale_import
            )
            tasks.append(_task(
                name, notebook.source(), codes, fix=False, unsafe_fixes=unsafe, ignore_noqa=options.ignore_noqa,
                with_edits=True, grad_scale_import=settings.grad_scale_import,
            ))
            entries.append(("notebook", name, data, unsafe, notebook, relint))
            return
        tasks.append(_task(
            name, data, codes,
            fix=fix, unsafe_fixes=unsafe, ignore_noqa=options.ignore_noqa,
            with_edits=with_edits, grad_scale_import=settings.grad_scale_import,
        ))
        entries.append(("task", name, data, unsafe))

    def finish() -> Run:
        cache = None if options.no_cache else Cache(_cache_directory(resolver))
        with _progress(lint_many(options.jobs, tasks, cache=cache), len(tasks)) as results:
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
        data = options.stdin_data if options.stdin_data is not None else sys.stdin.buffer.read()
        name = options.stdin_filename or STDIN
        if options.stdin_filename:
            try:
                if resolver.for_path(Path(name)).is_excluded(Path(name)) and options.force_exclude:
                    run.outcomes.append(Outcome(name, data, _empty_result(name)))
                    return run
            except ConfigError as exc:
                raise ConfigProblem(str(exc)) from None
        add(name, data, Path(name) if options.stdin_filename else Path.cwd() / "stdin.py")
        return finish()

    try:
        files, problems = discover_files(list(paths) or ["."], resolver, force_exclude=options.force_exclude)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None
    for raw, message in problems:
        run.errors.append((raw, message))
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
        add(name, data, path)
    return finish()


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


def _relint(name: str, codes, source: bytes, *, ignore_noqa: bool, grad_scale_import: str):
    """Lint a notebook's new concatenation in this process, with each fix's edits (never raises)."""
    from gradfix.parallel import lint_task

    return lint_task(_task(
        name, source, codes, fix=False, ignore_noqa=ignore_noqa, with_edits=True, grad_scale_import=grad_scale_import,
    ))


def _task(name: str, data: bytes, codes, **flags):
    from gradfix.options import LintOptions
    from gradfix.parallel import Task

    return Task(name, data, LintOptions(tuple(codes), **flags))


def _notebook_result(notebook, name: str, result, *, fix: bool, unsafe_fixes: bool, relint):
    """The engine's result on a notebook's concatenated cells, in cell positions; with `fix`, the fixed notebook."""
    from gradfix.engine import FileResult

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


def _empty_result(name: str):
    from gradfix.engine import FileResult

    return FileResult(name)


def _is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class _ProgressBar:
    """`gradfix [#####-----] 120/400 files` on one line of a terminal, redrawn in place.

    Drawn when created, then at most every `interval` seconds and once more
    when the count reaches the total; `close()` erases it, so what is
    printed next (the summary, or the findings when stdout is the same
    terminal) starts on a clean line and the bar leaves nothing behind.
    Only carriage returns and spaces: no cursor or erase escapes that a
    terminal might not know.
    """

    def __init__(self, total: int, stream: TextIO, *, label: str = "gradfix", interval: float = 0.1) -> None:
        self.total, self.stream, self.label, self.interval = total, stream, label, interval
        self.width = self._columns(stream) - 1  # never the last column: some terminals wrap there
        self.drawn = 0  # length of the line on screen
        self.last = 0.0
        self.update(0, force=True)

    @staticmethod
    def _columns(stream) -> int:
        try:
            columns = os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        return columns if columns > 0 else 80

    def update(self, done: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if not (force or done >= self.total or now - self.last >= self.interval):
            return
        self.last = now
        count = f"{done}/{self.total} files"
        room = self.width - len(self.label) - len(count) - 4
        if room >= 10:
            filled = room * done // max(self.total, 1)
            line = f"{self.label} [{'#' * filled}{'-' * (room - filled)}] {count}"
        else:
            line = f"{self.label} {count}"[: self.width]
        self._write("\r" + line + " " * max(0, self.drawn - len(line)))
        self.drawn = len(line)

    def close(self) -> None:
        if self.drawn:
            self._write("\r" + " " * self.drawn + "\r")
            self.drawn = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a terminal gone away must not fail the run
            pass


@contextlib.contextmanager
def _progress(results: Iterator, total: int) -> Iterator[Iterator]:
    """`results`, counted on a progress bar on stderr when worth it (see PROGRESS_THRESHOLD).

    Only stderr is written to, and only when it is a terminal: stdout (JSON,
    SARIF, diffs, `fix -`'s source) never sees the bar. Each result counts
    when it arrives; the bar is erased when the block ends, however it ends.
    """
    stream = sys.stderr
    bar = _ProgressBar(total, stream) if total >= PROGRESS_THRESHOLD and _is_terminal(stream) else None

    def counted() -> Iterator:
        for done, item in enumerate(results, 1):
            bar.update(done)
            yield item

    try:
        yield iter(results) if bar is None else counted()
    finally:
        if bar is not None:
            bar.close()
        # The caller takes exactly one result per file and leaves `results`
        # suspended at its last one: close it now (a worker pool shuts down
        # there) rather than whenever it is garbage-collected.
        close = getattr(results, "close", None)
        if close is not None:
            close()


def _report_errors(errors: Sequence[Tuple[str, str]]) -> None:
    for path, message in errors:
        # Messages with a position read `LINE:COL: ...`; others are free text.
        separator = ":" if message[:1].isdigit() or message.startswith("cell ") else ": "
        click.echo(f"{path}{separator}{message}", err=True)


def _emit(text: str, output_file: Optional[str]) -> None:
    if output_file:
        from gradfix.files import write_output

        try:
            write_output(Path(output_file), text.encode("utf-8"))
        except OSError as exc:
            raise OutputProblem(f"{output_file}: cannot write: {exc.strerror or exc}") from None
    elif text:
        _echo(text, nl=False)


# --- commands --------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gradfix")
def main() -> None:
    """Find and exactly rewrite duplicated detached-operand autograd passes in PyTorch code."""


def _common(command):
    """Options shared by check and fix: rule selection, configuration, suppression, stdin."""
    options = [
        click.option("--select", multiple=True, metavar="CODES",
                     help="Rules to enable: codes, prefixes or ALL, comma-separated (replaces the configured selection)."),
        click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to enable on top of the selection."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable, comma-separated."),
        click.option("--config", type=click.Path(dir_okay=False, readable=False), metavar="PATH",
                     help="Use this configuration file for every file (pyproject.toml or gradfix.toml)."),
        click.option("--isolated", is_flag=True, help="Ignore all configuration files."),
        click.option("--exclude", multiple=True, metavar="GLOBS",
                     help="Paths to exclude, comma-separated; replaces the configured `exclude` (and the defaults)."),
        click.option("--extend-exclude", multiple=True, metavar="GLOBS",
                     help="Paths to exclude on top of the configured ones, comma-separated."),
        click.option("--force-exclude", is_flag=True, help="Apply exclusions to paths named on the command line too."),
        click.option("--ignore-noqa", is_flag=True, help="Report findings even where `# noqa` suppresses them."),
        click.option("--stdin-filename", metavar="PATH", help="The name of the file read from `-` (for configuration and messages)."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain."),
        click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Include fixes that are not proven exact."),
        click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Worker processes for the files that need parsing (default: one per core)."),
        click.option("--no-cache", is_flag=True,
                     help="Neither read nor write the result cache (.gradfix_cache/, or $GRADFIX_CACHE_DIR)."),
    ]
    for option in reversed(options):
        command = option(command)
    # No click-side checks (click.Path is `readable=True` by default): one unreadable path
    # would abort the run before the others are checked; each gets its own line instead.
    return click.argument("paths", nargs=-1, type=click.Path(readable=False))(command)


def _options(kwargs) -> Options:
    return Options(
        select=_split_codes(kwargs["select"]),
        extend_select=tuple(_split_codes(kwargs["extend_select"]) or ()),
        ignore=tuple(_split_codes(kwargs["ignore"]) or ()),
        config=kwargs["config"],
        isolated=kwargs["isolated"],
        force_exclude=kwargs["force_exclude"],
        ignore_noqa=kwargs["ignore_noqa"],
        stdin_filename=kwargs["stdin_filename"],
        unsafe_fixes=kwargs["unsafe_fixes"],
        jobs=kwargs["jobs"],
        no_cache=kwargs["no_cache"],
        exclude=_split_globs(kwargs["exclude"]),
        extend_exclude=tuple(_split_globs(kwargs["extend_exclude"]) or ()),
    )


def _split_globs(values: Sequence[str]) -> Optional[List[str]]:
    """`--exclude a,b --exclude c` as globs; None when the option was not given."""
    if not values:
        return None
    return [glob.strip() for value in values for glob in value.split(",") if glob.strip()]


@main.command()
@_common
@click.option("--output-format", type=click.Choice(["concise", "full", "json", "sarif", "github"]),
              default="concise", show_default=True, help="How findings are printed.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), help="Write the findings to this file.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of the findings.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the fixes as a unified diff and write nothing.")
@click.option("--show-fixes", is_flag=True, help="Show each finding's proposed fix.")
@click.option("--github-level", type=click.Choice(["error", "warning", "notice"]), default="error", show_default=True,
              help="The annotation level of findings in --output-format github.")
def check(paths, output_format, output_file, statistics, show_diff, show_fixes, github_level, **kwargs) -> None:
    """Report findings in PATHS (files or directories; default: `.`; `-` reads standard input)."""
    from gradfix.output import render
    from gradfix.output import statistics as render_statistics

    options = _options(kwargs)
    wants_edits = show_fixes or output_format in ("full", "json", "sarif")
    run = _run(paths, options, fix=show_diff, with_edits=wants_edits)
    _report_errors(run.errors)

    findings = sorted(
        (f for outcome in run.outcomes for f in outcome.result.findings), key=lambda f: f.sort_key()
    )
    # --unsafe-fixes offers unsafe fixes (the `[*]` mark, SARIF fixes) but
    # never changes what a fix is: it stays "unsafe", with its reason, in every format.
    unsafe_shown = any(o.unsafe_fixes for o in run.outcomes)
    if show_diff:
        text = "".join(
            _outcome_diff(o) for o in run.outcomes if o.result.fixed is not None
        )
        _emit(text, output_file)
        fixable = sum(o.result.applied for o in run.outcomes)
        remaining = sum(len(o.result.remaining) for o in run.outcomes)
        click.echo(f"Would fix {_plural(fixable, 'finding')}" + (f" ({remaining} not fixable)." if remaining else "."), err=True)
        status = EXIT_FINDINGS if findings else EXIT_CLEAN
    else:
        sources = _sources(run.outcomes) if output_format == "full" or show_fixes else None
        if statistics:
            text = render_statistics(findings, unsafe_fixes=unsafe_shown)
        else:
            text = render(
                findings,
                output_format,
                sources=sources,
                show_fixes=show_fixes,
                color=output_format in ("concise", "full") and not output_file and _use_color(sys.stdout),
                unsafe_fixes=unsafe_shown,
                # The files that could not be checked are part of the machine formats (stderr has them too).
                errors=run.errors,
                github_level=github_level,
            )
        _emit(text, output_file)
        if output_format in ("concise", "full") or statistics:
            fixable = sum(f.fix is not None and (f.fix.safe or unsafe_shown) for f in findings)
            if findings:
                tail = f" ({fixable} fixable with `gradfix fix --apply`)" if fixable else ""
                click.echo(f"Found {_plural(len(findings), 'finding')}{tail}.", err=True)
            elif not run.errors:
                click.echo("All checks passed!", err=True)
        status = EXIT_FINDINGS if findings else EXIT_CLEAN
    if run.errors:
        click.echo(f"{_plural(len(run.errors), 'file')} could not be checked.", err=True)
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_CLEAN if kwargs["exit_zero"] else status)


@main.command()
@_common
@click.option("--apply", "apply_", is_flag=True, help="Write the fixes (default: print a unified diff and write nothing).")
@click.option("--show-fixes", is_flag=True, help="List each fixed finding.")
def fix(paths, apply_: bool, show_fixes: bool, **kwargs) -> None:
    """Rewrite findings in PATHS: print a unified diff, or write the files with --apply.

    With `-` the source is read from standard input and the fixed source is
    written to standard output.
    """
    from gradfix.files import NotReplaced, replace_file
    from gradfix.output import location

    options = _options(kwargs)
    stdin_mode = list(paths) == [STDIN]
    if stdin_mode:
        # An editor replaces its buffer with what `fix -` prints: whatever goes wrong (a syntax
        # error, an invalid notebook, a bad option or configuration), the input comes back unchanged.
        options.stdin_data = sys.stdin.buffer.read()
        try:
            run = _run(paths, options, fix=True)
        except click.ClickException:
            _echo_bytes(options.stdin_data)
            raise
        if not run.outcomes or any(o.result.error for o in run.outcomes):
            _echo_bytes(options.stdin_data)
    else:
        run = _run(paths, options, fix=True)
    _report_errors(run.errors)
    errors = len(run.errors)
    applied = changed_files = 0
    remaining = []
    fixed_findings = []
    for outcome in run.outcomes:
        result = outcome.result
        if result.error:
            continue
        if stdin_mode:
            _echo_bytes(result.fixed if result.fixed is not None else outcome.original)
        elif result.fixed is not None:
            if apply_:
                # Re-checked right before the rename: a file edited since it was read, one the
                # user could not write in place, or one with other hard links is left alone.
                try:
                    replace_file(Path(outcome.path), result.fixed, original=outcome.original)
                except NotReplaced as exc:
                    errors += 1
                    click.echo(f"{outcome.path}: {exc}", err=True)
                    remaining.extend(result.findings)
                    continue
                except OSError as exc:
                    errors += 1
                    click.echo(f"{outcome.path}: cannot write: {exc.strerror or exc}; file left unchanged", err=True)
                    remaining.extend(result.findings)
                    continue
            else:
                _echo(_outcome_diff(outcome), nl=False)
        if result.fixed is not None:
            applied += result.applied
            changed_files += 1
            # The findings the engine applied, not a guess from positions: the import a fix adds
            # moves every later finding down a line.
            fixed_findings.extend(result.fixed_findings)
        remaining.extend(result.remaining)
    remaining.sort(key=lambda f: f.sort_key())
    for finding in remaining:
        mark = " [*]" if finding.fixable else ""
        line = f"{location(finding)}: {finding.code}{mark} {finding.message}"
        if stdin_mode:
            click.echo(line, err=True)
        else:
            _echo(line)
    if show_fixes and fixed_findings:
        click.echo(("Fixed" if apply_ else "Would fix") + ":", err=True)
        for finding in sorted(fixed_findings, key=lambda f: f.sort_key()):
            click.echo(f"  {location(finding)}: {finding.code} {finding.fix.description}", err=True)
    verb = "Fixed" if apply_ or stdin_mode else "Would fix"
    summary = f"{verb} {_plural(applied, 'finding')} in {_plural(changed_files, 'file')}"
    if remaining:
        unsafe = sum(1 for f in remaining if f.fix is not None and not f.fix.safe)
        summary += f"; {len(remaining)} remaining"
        if unsafe and not any(o.unsafe_fixes for o in run.outcomes):
            summary += f" ({unsafe} with an unsafe fix: see the message; --unsafe-fixes applies it)"
    click.echo(summary + ".", err=True)
    if errors:
        sys.exit(EXIT_ERROR)
    # A dry run leaves every finding on disk: only a written fix counts as fixed.
    pending = bool(remaining) or (not apply_ and not stdin_mode and applied > 0)
    sys.exit(EXIT_FINDINGS if pending and not kwargs["exit_zero"] else EXIT_CLEAN)


def _thread_count(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """--threads must be a positive count: a one-line error (exit 2) otherwise."""
    if value < 1:
        click.echo(f"gradfix verify: --threads must be at least 1, got {value}", err=True)
        ctx.exit(EXIT_ERROR)
    return value


@main.command()
@click.argument("snippets", nargs=-1, required=True, type=click.Path(readable=False))
@click.option("--device", type=click.Choice(["cpu", "cuda", "auto"]), default="auto", show_default=True,
              help="Where to run both versions.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (and so verify) unsafe fixes.")
@click.option("--repeat", type=click.IntRange(min=0), default=20, show_default=True,
              help="Timed steps of each version, interleaved (0: no timing).")
# Default 1 (as benchmarks/ use): the timings then measure the work each
# version does rather than how torch's thread pool fared against other jobs
# for the cores, which made speedups on a shared machine unreliable.  See
# gradfix.harness.timing.DEFAULT_THREADS (kept equal; cli.py does not import torch).
@click.option("--threads", type=int, default=1, show_default=True, metavar="N", callback=_thread_count,
              help="CPU threads for torch during the run (torch.set_num_threads; restored afterwards).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for both runs.")
@click.option("-v", "--verbose", is_flag=True, help="Show every compared tensor, not only mismatches.")
@click.option("--select", multiple=True, metavar="CODES",
              help="Rules to enable: codes, prefixes or ALL, comma-separated (replaces the configured selection).")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable, comma-separated.")
@click.option("--config", type=click.Path(dir_okay=False, readable=False), metavar="PATH", help="Configuration file to use.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
def verify(snippets, device: str, unsafe_fixes: bool, repeat: int, threads: int, seed: int, verbose: bool,
           select, extend_select, ignore, config, isolated) -> None:
    """Rewrite each SNIPPET in memory, run original and rewrite, compare gradients and time them.

    Snippet protocol: module-level code is setup; a `step()` function, if
    defined, is the training step that is compared and timed. See the README.
    """
    try:
        from gradfix.harness import DeviceUnavailable, format_report, resolve_device, verify_pair
    except ImportError as exc:
        click.echo(f"gradfix verify needs torch: pip install 'gradfix[verify]' ({exc})", err=True)
        sys.exit(EXIT_ERROR)

    try:
        chosen_device = resolve_device(device)
    except DeviceUnavailable as exc:
        click.echo(f"gradfix verify: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    options = Options(
        select=_split_codes(select),
        extend_select=tuple(_split_codes(extend_select) or ()),
        ignore=tuple(_split_codes(ignore) or ()),
        config=config,
        isolated=isolated,
        unsafe_fixes=True if unsafe_fixes else None,
    )
    run = _run(list(snippets), options, fix=True)
    _report_errors(run.errors)
    status = EXIT_ERROR if run.errors else EXIT_CLEAN
    for outcome in run.outcomes:
        result = outcome.result
        if result.error:
            continue
        _echo(f"== {outcome.path}")
        if result.fixed is None:
            pending = [f for f in result.findings if f.fix is not None and not f.fix.safe]
            hint = " (only unsafe fixes: add --unsafe-fixes to verify them)" if pending else ""
            _echo(f"nothing to rewrite{hint}")
            continue
        _echo(f"rewrote {_plural(result.applied, 'finding')}")
        if outcome.notebook is not None:  # the code cells, concatenated, IPython-only lines as `None`
            original, rewritten = outcome.notebook.script(original=True), outcome.notebook.script()
        else:
            original, rewritten = _decode(outcome.original), _decode(result.fixed)
        report = verify_pair(
            original, rewritten,
            filename=outcome.path, device=chosen_device, repeat=repeat, seed=seed, threads=threads,
        )
        _echo(format_report(report, verbose=verbose))
        # The original raising is a bad snippet (exit 2); the rewrite raising
        # where the original ran is a difference the rewrite made (exit 1).
        if report.error and not report.rewrite_raised:
            status = max(status, EXIT_ERROR)
        elif not report.ok:
            status = max(status, EXIT_FINDINGS)
    sys.exit(status)


@main.command()
def server() -> None:
    """Run the language server over stdin/stdout (needs `pip install 'gradfix[server]'`).

    Diagnostics on open, change and save; a code action per fix (unsafe ones
    titled as such); settings from the nearest [tool.gradfix].
    """
    try:
        from gradfix.server import serve

        import pygls  # noqa: F401 - fail here, with one line, when the extra is missing
        import lsprotocol  # noqa: F401
    except ImportError as exc:
        click.echo(f"gradfix server needs pygls: pip install 'gradfix[server]' ({exc})", err=True)
        sys.exit(EXIT_ERROR)
    serve()


@main.command()
@click.argument("code", required=False)
@click.option("--all", "all_", is_flag=True, help="List every rule.")
def rule(code: Optional[str], all_: bool) -> None:
    """Show the documentation of rule CODE, or list every rule with --all."""
    import inspect

    from gradfix.rules import ALL_RULES, by_code

    if all_ or not code:
        # Columns as wide as their longest entry, two spaces apart.
        rows = [("code", "name", "default", "fix", "summary")] + [
            (r.CODE, r.NAME, "yes" if r.DEFAULT else "opt-in", r.FIXABLE, r.SUMMARY) for r in ALL_RULES
        ]
        widths = [max(len(row[i]) for row in rows) + 2 for i in range(4)]
        for row in rows:
            _echo("".join(cell.ljust(width) for cell, width in zip(row, widths)) + row[4])
        return
    found = by_code(code)
    if found is None:
        raise click.UsageError(f"unknown rule `{code}`; `gradfix rule --all` lists them")
    _echo(inspect.getdoc(found))


if __name__ == "__main__":  # pragma: no cover
    main()
