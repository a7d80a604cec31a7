"""gradfix's Python API: check and fix source text or files with the engine and rules the CLI uses.

    from gradfix import api

    findings = api.check_source(source, path="train.py")
    result = api.fix_source(source, path="train.py")          # result.source, .applied, .remaining
    for path, file_result in api.check_paths(["src/"]).items():
        ...
    run = api.lint_paths(["src/"], api.RunOptions(select=("GF",)), fix=True)   # what `gradfix fix` does
    for outcome in run.outcomes:
        if outcome.result.fixed is not None:
            print(outcome.diff())                               # or outcome.write_fix()

`Options` selects rules (codes, prefixes or "ALL", as `--select`), applies unsafe fixes or
ignores `# noqa` on request, and names where rewritten code imports `grad_scale` from; it builds
the engine's `LintOptions` (`Options.lint_options`: the selected rule codes and the flags, the
one options object of `gradfix.engine.lint_bytes`, worker tasks and the result cache). Source
functions never read configuration files; `check_paths` walks directories and reads each file's
`[tool.gradfix]` as `gradfix check` does, unless `isolated=True`. `lint_paths` is the command
line's run over paths (`RunOptions` holds its options: configuration, excludes, worker
processes, the cache), returning a `Run` of `Outcome`s (see `gradfix.pipeline`). Nothing here
imports torch or runs user code. Errors in a file (a syntax error) are in the result
(`FileResult.error`), never raised; a bad selector raises `ValueError`, a bad configuration
`gradfix.config.ConfigError` (the paths functions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple, Union

from gradfix.engine import FileResult, lint_bytes
from gradfix.findings import Finding
from gradfix.options import DEFAULT_GRAD_SCALE_IMPORT, LintOptions
from gradfix.pipeline import Outcome, Run, RunOptions, lint_paths

Source = Union[str, bytes]


@dataclass(frozen=True)
class Options:
    """What to check and how to fix (the CLI's options that apply to one file)."""

    select: Optional[Tuple[str, ...]] = None  # None: the default rules (or the configuration's)
    ignore: Tuple[str, ...] = ()
    unsafe_fixes: bool = False
    ignore_noqa: bool = False
    grad_scale_import: str = DEFAULT_GRAD_SCALE_IMPORT

    def lint_options(self, *, fix: bool = False) -> LintOptions:
        """The engine's options for these, no configuration read: the codes of the rules
        `select` and `ignore` choose (`ValueError` for an unknown selector), and the flags."""
        from gradfix.rules import SelectionError, select

        try:
            rules = select(list(self.select) if self.select is not None else None, self.ignore)
        except SelectionError as exc:
            raise ValueError(str(exc)) from None
        return LintOptions(
            tuple(r.CODE for r in rules),
            fix=fix,
            unsafe_fixes=self.unsafe_fixes,
            ignore_noqa=self.ignore_noqa,
            grad_scale_import=self.grad_scale_import,
        )


@dataclass(frozen=True)
class FixResult:
    source: str  # the fixed text (the input when nothing changed)
    applied: List[Finding] = field(default_factory=list)  # findings whose fixes were applied
    remaining: List[Finding] = field(default_factory=list)  # findings left in `source`
    error: Optional[str] = None  # one line, "LINE:COL: what", when the source could not be checked


def _bytes(source: Source) -> bytes:
    return source.encode("utf-8") if isinstance(source, str) else source


def check_source(source: Source, path: str = "<string>", options: Options = Options()) -> List[Finding]:
    """The findings in `source` (sorted by position); [] for a file that does not parse (see `lint_source`)."""
    return lint_source(source, path, options).findings


def lint_source(source: Source, path: str = "<string>", options: Options = Options()) -> FileResult:
    """The engine's whole result for `source`: findings, and `error` for a file that could not be checked."""
    return lint_bytes(_bytes(source), path, options.lint_options())


def fix_source(source: Source, path: str = "<string>", options: Options = Options()) -> FixResult:
    """`source` with its safe fixes applied (and unsafe ones with `unsafe_fixes`), as `gradfix fix -`."""
    data = _bytes(source)
    result = lint_bytes(data, path, options.lint_options(fix=True))
    text = (result.fixed if result.fixed is not None else data).decode("utf-8", errors="surrogateescape")
    return FixResult(text, list(result.fixed_findings), list(result.remaining), result.error)


def check_paths(
    paths: Iterable[Union[str, Path]], options: Options = Options(), *, isolated: bool = False
) -> Dict[str, FileResult]:
    """Every Python file and notebook under `paths` (directories walked with the configured
    excludes and `.gitignore`) mapped to its result; each file's rules from its nearest
    configuration (the `Options` selection, when given, replaces it, as `--select` does). A path
    that does not exist or cannot be read is a result with `error` set. In this process, without
    the result cache (`lint_paths` has both)."""
    run = lint_paths(
        list(paths),
        RunOptions(
            select=options.select,
            ignore=options.ignore,
            isolated=isolated,
            ignore_noqa=options.ignore_noqa,
            unsafe_fixes=options.unsafe_fixes,
            grad_scale_import=options.grad_scale_import,
            jobs=1,
            no_cache=True,
        ),
    )
    out: Dict[str, FileResult] = {name: FileResult(name, error=message) for name, message in run.errors}
    out.update((outcome.path, outcome.result) for outcome in run.outcomes)
    return dict(sorted(out.items()))


__all__ = [
    "Options",
    "FixResult",
    "check_source",
    "lint_source",
    "fix_source",
    "check_paths",
    "LintOptions",
    "RunOptions",
    "Run",
    "Outcome",
    "lint_paths",
]
