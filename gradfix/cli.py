"""The `gradfix` command line: check, fix, verify, rule.

Exit codes (DESIGN §4): 0 clean (or everything fixed), 1 findings remain (or
`verify` found a mismatch), 2 usage, configuration, input or internal error.

Only `verify` imports torch, and only when it runs; `check` and `fix` never
execute user code.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import click

from gradfix import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split_codes(values: Sequence[str]) -> Optional[List[str]]:
    if not values:
        return None
    return [code for value in values for code in value.split(",") if code.strip()]


def _rules(select: Sequence[str], ignore: Sequence[str]):
    from gradfix.rules import SelectionError, select as choose

    try:
        return choose(_split_codes(select), _split_codes(ignore) or ())
    except SelectionError as exc:
        raise click.UsageError(str(exc)) from None


def _error(path: str, message: str) -> None:
    click.echo(f"{path}:{message}" if message[:1].isdigit() else f"{path}: {message}", err=True)


def _lint_paths(paths: Sequence[str], rules, *, fix: bool, unsafe_fixes: bool, ignore_noqa: bool):
    """Yield (FileResult, original bytes) for every file; problems with a path become results with an error."""
    from gradfix.engine import FileResult, lint_bytes
    from gradfix.files import discover

    files, problems = discover(paths or ["."])
    for raw, message in problems:
        yield FileResult(raw, error=message), b""
    for path in files:
        name = str(path)
        try:
            data = path.read_bytes()
        except IsADirectoryError:
            yield FileResult(name, error="is a directory"), b""
            continue
        except OSError as exc:
            yield FileResult(name, error=f"cannot read: {exc.strerror or exc}"), b""
            continue
        yield lint_bytes(data, name, rules, fix=fix, unsafe_fixes=unsafe_fixes, ignore_noqa=ignore_noqa), data


def _finding_line(finding) -> str:
    mark = " [*]" if finding.fixable else ""
    return f"{finding.path}:{finding.line}:{finding.col}: {finding.code}{mark} {finding.message}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gradfix")
def main() -> None:
    """Find and exactly rewrite duplicated detached-operand autograd passes in PyTorch code."""


_select_option = click.option(
    "--select", multiple=True, metavar="CODES",
    help="Rules to enable: codes, prefixes or ALL, comma-separated (default: the default rules).",
)
_ignore_option = click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable, comma-separated.")
_noqa_option = click.option("--ignore-noqa", is_flag=True, help="Report findings even where `# noqa` suppresses them.")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@_select_option
@_ignore_option
@_noqa_option
def check(paths: Tuple[str, ...], select, ignore, ignore_noqa: bool) -> None:
    """Report findings in PATHS (files or directories; default: .)."""
    rules = _rules(select, ignore)
    findings = []
    errors = 0
    for result, _ in _lint_paths(paths, rules, fix=False, unsafe_fixes=False, ignore_noqa=ignore_noqa):
        if result.error:
            errors += 1
            _error(result.path, result.error)
        findings.extend(result.findings)
    findings.sort(key=lambda f: f.sort_key())
    for finding in findings:
        click.echo(_finding_line(finding))
    fixable = sum(f.fixable for f in findings)
    if findings:
        tail = f" ({fixable} fixable with `gradfix fix --apply`)" if fixable else ""
        click.echo(f"Found {_plural(len(findings), 'finding')}{tail}.", err=True)
    elif not errors:
        click.echo("All checks passed!", err=True)
    if errors:
        click.echo(f"{_plural(errors, 'file')} could not be checked.", err=True)
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if findings else EXIT_CLEAN)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--apply", "apply_", is_flag=True, help="Write the fixes (default: print a diff and write nothing).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that are not proven exact.")
@_select_option
@_ignore_option
@_noqa_option
def fix(paths: Tuple[str, ...], apply_: bool, unsafe_fixes: bool, select, ignore, ignore_noqa: bool) -> None:
    """Rewrite findings in PATHS: print a unified diff, or write the files with --apply."""
    from gradfix.files import write_atomic

    rules = _rules(select, ignore)
    errors = applied = changed_files = 0
    remaining = []
    for result, original in _lint_paths(paths, rules, fix=True, unsafe_fixes=unsafe_fixes, ignore_noqa=ignore_noqa):
        if result.error:
            errors += 1
            _error(result.path, result.error)
            continue
        if result.fixed is not None:
            if apply_:
                try:
                    write_atomic(Path(result.path), result.fixed)
                except OSError as exc:
                    errors += 1
                    _error(result.path, f"cannot write: {exc.strerror or exc}; file left unchanged")
                    remaining.extend(result.findings)
                    continue
            else:
                click.echo(_diff(result.path, original, result.fixed), nl=False)
            applied += result.applied
            changed_files += 1
        remaining.extend(result.remaining)
    remaining.sort(key=lambda f: f.sort_key())
    for finding in remaining:
        click.echo(_finding_line(finding))
    verb = "Fixed" if apply_ else "Would fix"
    summary = f"{verb} {_plural(applied, 'finding')} in {_plural(changed_files, 'file')}"
    if remaining:
        unsafe = sum(1 for f in remaining if f.fix is not None and not f.fix.safe)
        summary += f"; {len(remaining)} remaining"
        if unsafe and not unsafe_fixes:
            summary += f" ({unsafe} with an unsafe fix: see the message, and use --unsafe-fixes to apply)"
    click.echo(summary + ".", err=True)
    if errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if remaining else EXIT_CLEAN)


def _diff(path: str, original: bytes, fixed: bytes) -> str:
    before = _decode(original)
    after = _decode(fixed)
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=path, tofile=path
    )
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return text


def _decode(data: bytes) -> str:
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace")


@main.command()
@click.argument("snippets", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--device", type=click.Choice(["cpu", "cuda", "auto"]), default="auto", show_default=True,
              help="Where to run both versions.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (and so verify) unsafe fixes.")
@click.option("--repeat", type=click.IntRange(min=0), default=20, show_default=True,
              help="Timed steps of each version, interleaved (0: no timing).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for both runs.")
@click.option("-v", "--verbose", is_flag=True, help="Show every compared tensor, not only mismatches.")
def verify(snippets: Tuple[str, ...], device: str, unsafe_fixes: bool, repeat: int, seed: int, verbose: bool) -> None:
    """Rewrite each SNIPPET in memory, run original and rewrite, compare gradients and time them.

    Snippet protocol: module-level code is setup; a `step()` function, if
    defined, is the training step that is compared and timed. See the README.
    """
    try:
        from gradfix.harness import DeviceUnavailable, format_report, resolve_device, verify_pair
    except ImportError as exc:
        click.echo(f"gradfix verify needs torch: pip install 'gradfix[verify]' ({exc})", err=True)
        sys.exit(EXIT_ERROR)
    from gradfix.engine import lint_bytes
    from gradfix.rules import select as choose

    try:
        chosen_device = resolve_device(device)
    except DeviceUnavailable as exc:
        click.echo(f"gradfix verify: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    rules = choose(None)
    status = EXIT_CLEAN
    for snippet in snippets:
        data = Path(snippet).read_bytes()
        result = lint_bytes(data, snippet, rules, fix=True, unsafe_fixes=unsafe_fixes)
        if result.error:
            _error(snippet, result.error)
            status = EXIT_ERROR
            continue
        click.echo(f"== {snippet}")
        if result.fixed is None:
            pending = [f for f in result.findings if f.fix is not None and not f.fix.safe]
            hint = " (only unsafe fixes: add --unsafe-fixes to verify them)" if pending else ""
            click.echo(f"nothing to rewrite{hint}")
            continue
        click.echo(f"rewrote {_plural(result.applied, 'finding')}")
        report = verify_pair(
            _decode(data), _decode(result.fixed), filename=snippet, device=chosen_device, repeat=repeat, seed=seed
        )
        click.echo(format_report(report, verbose=verbose))
        if report.error:
            status = max(status, EXIT_ERROR)
        elif not report.ok:
            status = max(status, EXIT_FINDINGS)
    sys.exit(status)


@main.command()
@click.argument("code", required=False)
@click.option("--all", "all_", is_flag=True, help="List every rule.")
def rule(code: Optional[str], all_: bool) -> None:
    """Show the documentation of rule CODE, or list every rule with --all."""
    import inspect

    from gradfix.rules import ALL_RULES, by_code

    if all_ or not code:
        click.echo(f"{'code':<7}{'name':<28}{'default':<9}{'fix':<11}summary")
        for r in ALL_RULES:
            click.echo(f"{r.CODE:<7}{r.NAME:<28}{'yes' if r.DEFAULT else 'opt-in':<9}{r.FIXABLE:<11}{r.SUMMARY}")
        return
    found = by_code(code)
    if found is None:
        raise click.UsageError(f"unknown rule `{code}`; `gradfix rule --all` lists them")
    click.echo(inspect.getdoc(found))


if __name__ == "__main__":  # pragma: no cover
    main()
