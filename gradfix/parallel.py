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
them go to the workers, which run the whole prefilter and then libcst. The
tasks may come from a lazy iterable (`gradfix.pipeline` reads each file as
it is pulled): the workers start as soon as that much text has passed the
token stage, and take each later file as it arrives, importing libcst and
the analysis as they start (`_preload`), while this process reads the rest.

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
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional

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
    """Lint every task; return an iterator with one `FileResult` per task, in input order.

    `tasks` is consumed before this returns, and may be lazy (the files read as it yields them):
    once enough text has passed the token stage to pay for worker processes, the workers start
    on it while the rest is still being read. `jobs`: worker processes (None or 0:
    `default_jobs()`; 1: all in this process). `cache`: a `gradfix.cache.Cache`, or None.
    """
    run = _Run(jobs or default_jobs(), cache)
    try:
        for task in tasks:
            run.add(task)
    except BaseException:
        run.close()  # (a configuration error while reading: the workers stop at once)
        raise
    return run.results()


class _Run:
    """One `lint_many` call: the tasks as they arrive, their results, and the workers once started."""

    def __init__(self, jobs: int, cache) -> None:
        self.jobs = jobs
        self.cache = cache
        self.tasks: List[Task] = []
        self.done: List[Optional[FileResult]] = []
        self.keys: List[Optional[str]] = []
        self.pending: List[int] = []  # past the token stage, not in the cache
        self.pending_bytes = 0
        self.pool = None
        self.futures: Dict[int, object] = {}

    def add(self, task: Task) -> None:
        index = len(self.tasks)
        self.tasks.append(task)
        self.keys.append(None)
        self.done.append(None)
        if not prefilter(task.data, rule_modules(task.options.codes), parse=False):
            self.done[index] = FileResult(task.path)  # what lint_bytes returns without a candidate rule
            return
        if self.cache is not None:
            self.keys[index] = self.cache.key(task.data, task.options)
            hit = self.cache.get(self.keys[index], task.path)
            if hit is not None:
                self.done[index] = hit
                return
        self.pending.append(index)
        self.pending_bytes += len(task.data)
        if self.pool is not None:
            self._submit([index])
        elif self.jobs > 1 and len(self.pending) >= 2 and self.pending_bytes >= PARALLEL_PRECHECK_BYTES:
            # The prechecks alone (a CPython parse each) are worth the workers: they run them
            # (`lint_bytes` does), and the files that need libcst go on there at once.
            self._start(self.pending)

    def _start(self, indexes: List[int]) -> None:
        self.pool = _pool(self.jobs)
        self._submit(indexes)

    def _submit(self, indexes: List[int]) -> None:
        # Largest first: the long files start early and the pool drains evenly.
        for index in sorted(indexes, key=lambda i: -len(self.tasks[i].data)):
            try:
                self.futures[index] = self.pool.submit(lint_task, self.tasks[index])
            except Exception:  # noqa: BLE001 - a broken pool: `_result` lints the file alone
                pass

    def close(self) -> None:
        if self.pool is not None:
            # Also when the consumer stops early: pending work is dropped.
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def results(self) -> Iterator[FileResult]:
        if self.pool is None:
            todo: List[int] = []
            for index in self.pending:
                task = self.tasks[index]
                if not _candidates(task.data, rule_modules(task.options.codes)):
                    self.done[index] = FileResult(task.path)
                    _store(self.cache, self.keys[index], self.done[index])
                    continue
                todo.append(index)
            parallel = self.jobs > 1 and (
                len(todo) >= PARALLEL_MIN_FILES
                or (len(todo) >= 2 and sum(len(self.tasks[i].data) for i in todo) >= PARALLEL_MIN_BYTES)
            )
            if parallel:
                self._start(todo)
        try:
            for index, result in enumerate(self.done):
                if result is None:
                    result = self._result(index)
                    _store(self.cache, self.keys[index], result)
                yield result
        finally:
            self.close()

    def _result(self, index: int) -> FileResult:
        task = self.tasks[index]
        future = self.futures.get(index)
        if future is None:
            # Not sent to the workers (no pool), or its submission failed (a broken pool).
            return lint_task(task) if self.pool is None else _alone(task)
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result()
        except BrokenProcessPool:
            return _alone(task)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that did not pickle
            return FileResult(task.path, error=internal_error(exc))


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


# What a worker imports to lint a file: libcst (a third of a second of its dataclasses) and the
# analysis. Each worker imports it as it starts (`_preload`), while this process is still reading
# files, rather than when its first file reaches libcst.
_WORKER_MODULES = (
    "libcst",
    "libcst.metadata",
    "gradfix.engine",
    "gradfix.analysis.facts",
    "gradfix.analysis.positions",
    "gradfix.fixes.build",
    "gradfix.semicolons",
)


def _preload() -> None:
    import importlib

    from gradfix.rules import ALL_RULES

    for name in (*_WORKER_MODULES, *(rule.VISITOR.partition(":")[0] for rule in ALL_RULES)):
        importlib.import_module(name)


def _pool(workers: int):
    """A process pool of `workers`, each importing the analysis as it starts. (The platform's
    default start method: a fork where there is one, so no worker runs the caller's main module
    again, as a fork server or spawn would for a script without a `__main__` guard.)"""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers, initializer=_preload)


def _alone(task: Task) -> FileResult:
    """Retry a task whose worker died, in a pool of its own; report it if that one dies too."""
    from concurrent.futures.process import BrokenProcessPool

    with _pool(1) as pool:
        try:
            return pool.submit(lint_task, task).result()
        except BrokenProcessPool:
            return FileResult(
                task.path, error="internal error: the worker process linting this file died (a crash in native code, or out of memory)"
            )
        except Exception as exc:  # noqa: BLE001
            return FileResult(task.path, error=internal_error(exc))
