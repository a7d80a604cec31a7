"""Linting many files: the prefilter in this process, the parsing in worker processes.

`lint_many(jobs, tasks)` runs `gradfix.engine.lint_bytes` over many files and
yields their `FileResult`s in input order. The prefilter runs here: files
that fail its token stage (most files of most trees) cost a few substring
tests, the few that pass it are looked up in the cache, then parsed with
CPython's `ast` if need be; only the files that still need libcst (the
costly part) are linted, and only when there are enough of them to pay for
worker processes in a `concurrent.futures.ProcessPoolExecutor`, largest
first. Where the files past the token stage hold enough text that their
CPython parses are worth spreading too (`PARALLEL_PRECHECK_BYTES`), all of
them go to the workers, which run the whole prefilter and then libcst.

Results never hold libcst nodes: a `Fix`'s `replacements` (original
statement nodes mapped to new ones, meaningful only inside the process that
parsed the file) are emptied in every result, in worker and in serial runs
alike, so the output does not depend on `--jobs`. Everything the command line
needs survives: `fixable`, `safe`, `description`, `unsafe_reason`,
`imports`, `edits`, and for fix runs the fixed bytes (the fixing happens
where the file was parsed).

An exception inside the engine (a gradfix bug) does not end the run: the
file gets a one-line `error` naming the exception, and a worker that dies
(a crash in native code, the OOM killer) is retried alone once, then
reported the same way.

An optional `gradfix.cache.Cache` is consulted for the files that pass the
prefilter (the only ones worth caching) and filled with what was computed.
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator, List, NamedTuple, Optional

from gradfix.engine import FileResult, prefilter, rule_modules
from gradfix.options import LintOptions


class Task(NamedTuple):
    """One file to lint: its name (labels the findings), its bytes, and the options (picklable)."""

    path: str
    data: bytes
    options: LintOptions


# Worker processes pay off only past this much libcst work: this many files,
# or two or more totalling this many bytes (libcst with its metadata gets
# through some 20-50 KiB a second; starting the workers costs ~0.1 s).
PARALLEL_MIN_FILES = 3
PARALLEL_MIN_BYTES = 64 * 1024
# The prechecks (CPython's parser, some 5 MiB a second) go to the workers too past this much
# text: a quarter of a second of parsing, enough to pay for the workers' start.
PARALLEL_PRECHECK_BYTES = 1024 * 1024


def default_jobs() -> int:
    """Worker processes to use by default: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def lint_many(jobs: Optional[int], tasks: Iterable[Task], *, cache=None) -> Iterator[FileResult]:
    """Lint every task; yield one `FileResult` per task, in input order.

    `jobs`: worker processes (None or 0: `default_jobs()`; 1: all in this
    process). `cache`: a `gradfix.cache.Cache`, or None.
    """
    jobs = jobs or default_jobs()
    tasks = list(tasks)
    results: List[Optional[FileResult]] = [None] * len(tasks)
    keys: List[Optional[str]] = [None] * len(tasks)
    pending: List[int] = []  # past the token stage, not in the cache
    for index, (path, data, options) in enumerate(tasks):
        if not prefilter(data, rule_modules(options.codes), parse=False):
            results[index] = FileResult(path)  # what lint_bytes returns without a candidate rule
            continue
        if cache is not None:
            keys[index] = cache.key(data, options)
            hit = cache.get(keys[index], path)
            if hit is not None:
                results[index] = hit
                continue
        pending.append(index)

    if jobs > 1 and len(pending) >= 2 and sum(len(tasks[i].data) for i in pending) >= PARALLEL_PRECHECK_BYTES:
        # The prechecks alone (a CPython parse each) are worth the workers: they run them
        # (`lint_bytes` does), and the files that need libcst go on there at once.
        yield from _parallel(jobs, tasks, results, keys, pending, cache)
        return
    todo: List[int] = []
    for index in pending:
        if not _candidates(tasks[index].data, rule_modules(tasks[index].options.codes)):
            results[index] = FileResult(tasks[index].path)
            _store(cache, keys[index], results[index])
            continue
        todo.append(index)

    parallel = jobs > 1 and (
        len(todo) >= PARALLEL_MIN_FILES
        or (len(todo) >= 2 and sum(len(tasks[i].data) for i in todo) >= PARALLEL_MIN_BYTES)
    )
    if not parallel:
        for index, result in enumerate(results):
            if result is None:
                result = lint_task(tasks[index])
                _store(cache, keys[index], result)
            yield result
        return
    yield from _parallel(jobs, tasks, results, keys, todo, cache)


def lint_task(task: Task) -> FileResult:
    """Lint one task in this process: the engine's result (it holds no libcst node), never an exception."""
    from gradfix.engine import lint_bytes

    try:
        result = lint_bytes(task.data, task.path, task.options)
    except RecursionError:
        return FileResult(task.path, error="1:1: too deeply nested for gradfix's analysis (RecursionError)")
    except Exception as exc:  # noqa: BLE001 - one file's internal error must not end the run
        return FileResult(task.path, error=internal_error(exc))
    return result


def internal_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 120:  # a KeyError on a CST node prints the whole node: the line must stay a line
        text = text[:117] + "..."
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"internal error: {what} (a gradfix bug: please report it with this file)"


def _candidates(data: bytes, rules) -> bool:
    try:
        return bool(prefilter(data, rules))
    except Exception:  # noqa: BLE001 - let lint_task meet (and report) whatever this was
        return True


def _store(cache, key: Optional[str], result: FileResult) -> None:
    # An internal error may be transient (a worker killed for memory): never cached.
    if cache is not None and key is not None and not (result.error or "").startswith("internal error"):
        cache.put(key, result)


def _parallel(jobs, tasks, results, keys, todo, cache) -> Iterator[FileResult]:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # Largest first: the long files start early and the pool drains evenly.
    order = sorted(todo, key=lambda i: -len(tasks[i].data))
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(todo)))
    try:
        futures = {i: pool.submit(lint_task, tasks[i]) for i in order}
        for index, result in enumerate(results):
            if result is None:
                try:
                    result = futures[index].result()
                except BrokenProcessPool:
                    result = _alone(tasks[index])
                except Exception as exc:  # noqa: BLE001 - e.g. a result that did not pickle
                    result = FileResult(tasks[index].path, error=internal_error(exc))
                _store(cache, keys[index], result)
            yield result
    finally:
        # Also when the consumer stops early: pending work is dropped.
        pool.shutdown(wait=True, cancel_futures=True)


def _alone(task: Task) -> FileResult:
    """Retry a task whose worker died, in a pool of its own; report it if that one dies too."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=1) as pool:
        try:
            return pool.submit(lint_task, task).result()
        except BrokenProcessPool:
            return FileResult(
                task.path, error="internal error: the worker process linting this file died (a crash in native code, or out of memory)"
            )
        except Exception as exc:  # noqa: BLE001
            return FileResult(task.path, error=internal_error(exc))
