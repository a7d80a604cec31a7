"""The `gradfix` command line: check, fix, verify, rule, server.

Exit codes (docs/design.md §4): 0 clean (or everything fixed), 1 findings remain (or
`verify` found a mismatch), 2 usage, configuration, input or internal error.

Only `verify` imports torch, and only when it runs; `check` and `fix` never
execute user code.

This module parses options and prints: a run over paths (files walked,
configuration read, the cached parallel lint, notebooks, fixes) is
`gradfix.api.lint_paths` (`gradfix.pipeline`), the progress bar
`gradfix.progress`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import click

from gradfix import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN = "-"  # gradfix.pipeline.STDIN (not imported: `gradfix --help` stays light)


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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _use_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


# --- the run over files: gradfix.api ---------------------------------------------------------


def _lint(paths: Sequence[str], options, *, fix: bool, stdin: Optional[bytes] = None):
    """`gradfix.api.lint_paths` with the progress bar; a bad selector is a usage error, a bad
    configuration one line (both exit 2)."""
    from gradfix import api
    from gradfix.config import ConfigError
    from gradfix.progress import tracked
    from gradfix.rules import SelectionError

    try:
        return api.lint_paths(paths, options, fix=fix, stdin=stdin, progress=tracked)
    except SelectionError as exc:
        raise click.UsageError(str(exc)) from None
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None


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


def _options(kwargs):
    """The run's `gradfix.api.RunOptions` from the options of check and fix."""
    from gradfix.api import RunOptions

    return RunOptions(
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
    run = _lint(list(paths) or ["."], options, fix=show_diff)
    _report_errors(run.errors)

    findings = sorted(
        (f for outcome in run.outcomes for f in outcome.result.findings), key=lambda f: f.sort_key()
    )
    # --unsafe-fixes offers unsafe fixes (the `[*]` mark, SARIF fixes) but
    # never changes what a fix is: it stays "unsafe", with its reason, in every format.
    unsafe_shown = any(o.unsafe_fixes for o in run.outcomes)
    if show_diff:
        text = "".join(o.diff() for o in run.outcomes if o.result.fixed is not None)
        _emit(text, output_file)
        fixable = sum(o.result.applied for o in run.outcomes)
        remaining = sum(len(o.result.remaining) for o in run.outcomes)
        click.echo(f"Would fix {_plural(fixable, 'finding')}" + (f" ({remaining} not fixable)." if remaining else "."), err=True)
        status = EXIT_FINDINGS if findings else EXIT_CLEAN
    else:
        sources = run.sources() if output_format == "full" or show_fixes else None
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
    from gradfix.output import location

    options = _options(kwargs)
    stdin_mode = list(paths) == [STDIN]
    if stdin_mode:
        # An editor replaces its buffer with what `fix -` prints: whatever goes wrong (a syntax
        # error, an invalid notebook, a bad option or configuration), the input comes back unchanged.
        stdin = sys.stdin.buffer.read()
        try:
            run = _lint(paths, options, fix=True, stdin=stdin)
        except click.ClickException:
            _echo_bytes(stdin)
            raise
        if not run.outcomes or any(o.result.error for o in run.outcomes):
            _echo_bytes(stdin)
    else:
        run = _lint(list(paths) or ["."], options, fix=True)
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
                problem = outcome.write_fix()
                if problem is not None:
                    errors += 1
                    click.echo(problem, err=True)
                    remaining.extend(result.findings)
                    continue
            else:
                _echo(outcome.diff(), nl=False)
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
    from gradfix.api import RunOptions

    options = RunOptions(
        select=_split_codes(select),
        extend_select=tuple(_split_codes(extend_select) or ()),
        ignore=tuple(_split_codes(ignore) or ()),
        config=config,
        isolated=isolated,
        unsafe_fixes=True if unsafe_fixes else None,
    )
    run = _lint(list(snippets), options, fix=True)
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
        original, rewritten = outcome.texts()  # a notebook's code cells, concatenated
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
