"""Linting many files: the prefilter in this process, the parsing in worker processes.

`lint_many(jobs, tasks)` runs `gradfix.engine.lint_bytes` over many files and
yields their `FileResult`s in input order. The prefilter runs here: files
that fail its token stage (most files of most trees) cost a few substring
tests, the few that pass it are looked up in the cache, then parsed with
CPython's `ast` if need be; only the files that still need libcst (the
costly part) are linted, and only when there are enough of them to pay for
worker processes, largest first. On Linux the workers are forked from one
host process that imports libcst and the analysis once (`_Hosted`), elsewhere
they are a `concurrent.futures.ProcessPoolExecutor`'s (`_Executor`). Where the files past the token stage hold enough text that their
CPython parses are worth spreading too (`PARALLEL_PRECHECK_BYTES`), all of
them go to the workers, which run the whole prefilter and then libcst. The
tasks may come from a lazy iterable (`gradfix.pipeline` reads each file as
it is pulled): the workers start as soon as that much text has passed the
token stage, and take each later file as it arrives; libcst and the analysis
are imported (`_preload`) while this process reads the rest.

Results never hold libcst nodes: a `Fix`'s `replacements` (original
statement nodes mapped to new ones, meaningful only inside the process that
parsed the file) are emptied in every result, in worker and in serial runs
alike, so the output does not depend on `--jobs`. Everything the command line
needs survives: `fixable`, `safe`, `description`, `unsafe_reason`,
`imports`, `edits`, and for fix runs the fixed bytes (the fixing happens
where the file was parsed).

An exception inside the engine (a gradfix bug) does not end the run: the
file gets a one-line `error` naming the exception, and the file of a worker
that dies (a crash in native code, the OOM killer) is retried alone once,
then reported the same way.

An optional `gradfix.cache.Cache` is consulted for the files that pass the
prefilter (the only ones worth caching) and filled with what was computed.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
from collections import deque
from typing import Deque, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

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
# text: a tenth of a second of parsing, enough to pay for the workers' start, one import of the
# analysis by their host (`_Hosted`; with each worker importing it, it was 1 MiB).
PARALLEL_PRECHECK_BYTES = 512 * 1024


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
        self.pool = None  # a `_Hosted` or `_Executor` once the workers start

    def add(self, task: Task) -> None:
        index = len(self.tasks)
        self.tasks.append(task)
        self.keys.append(None)
        self.done.append(None)
        if self.pool is not None:
            # Between the files that go to the workers (most of a tree's files do not), a worker
            # that finished its task waits for this process to read its result and send the next.
            self.pool.poll(every=_POLL_INTERVAL)
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
            self.pool.poll()  # (results in, waiting workers fed, while the files are read)
        elif self.jobs > 1 and len(self.pending) >= 2 and self.pending_bytes >= PARALLEL_PRECHECK_BYTES:
            # The prechecks alone (a CPython parse each) are worth the workers: they run them
            # (`lint_bytes` does), and the files that need libcst go on there at once.
            self._start(self.pending)

    def _start(self, indexes: List[int]) -> None:
        try:
            self.pool = _Hosted(self.jobs) if _HOSTED else _Executor(self.jobs)
        except OSError:  # no process could be forked (EAGAIN, ENOMEM): the pool's way fails alike, file by file
            self.pool = _Executor(self.jobs)
        self._submit(indexes)

    def _submit(self, indexes: List[int]) -> None:
        # Largest first: the long files start early and the pool drains evenly.
        for index in sorted(indexes, key=lambda i: -len(self.tasks[i].data)):
            self.pool.submit(index, self.tasks[index])

    def close(self) -> None:
        if self.pool is not None:
            # Also when the consumer stops early: pending work is dropped.
            self.pool.close()
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
        if self.pool is None:
            return lint_task(self.tasks[index])
        return self.pool.result(index)


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


# Whether workers are forked from a host process (`_Hosted`): where `fork` is the platform's way to
# start a process (Linux). Elsewhere a `concurrent.futures` pool starts them as the platform does
# (`spawn` on macOS and Windows, where a fork of this process is not safe or not possible).
_HOSTED = hasattr(os, "fork") and sys.platform.startswith("linux")


class _Hosted:
    """Worker processes forked from one host process, itself forked from this one when the workers
    are wanted. The host imports libcst and the analysis once (`_preload`) while this process goes
    on reading files, then forks the workers, which start with all of it imported: a pool whose
    workers each import it pays that (a fifth of a second of CPU) once per worker, and on a tree
    with a few files to parse that was most of what `--select ALL` cost beyond the default rules.

    Each worker has a connection of its own (a socket pair) and holds at most one task: a task is
    sent only to a worker waiting for one (`poll`), so a send never waits on a busy worker, and a
    worker that dies is known by its connection's end, with the task it held. That task alone is
    retried (`_alone`), as a crash in native code may recur; the other workers go on.
    """

    def __init__(self, workers: int) -> None:
        from multiprocessing import Pipe

        pairs = [Pipe() for _ in range(workers)]
        theirs = [end for _, end in pairs]
        self.links = [mine for mine, _ in pairs]
        # What each worker holds: a task, None while it waits for one, `_STARTING` until it says it
        # is ready (a task larger than the connection's buffer sent before would stall this process
        # while the host imports).
        self.held: Dict[object, Optional[Tuple[int, Task]]] = {link: _STARTING for link in self.links}
        self.queue: Deque[Tuple[int, Task]] = deque()
        self.results: Dict[int, FileResult] = {}
        self.polled = 0.0  # (`time.monotonic()` of the last throttled poll)
        # Ctrl-C is held back across the fork: the host must not run on in this process's code.
        blocked = _block_interrupts()
        try:
            self.host = os.fork()
            if self.host == 0:
                _host(theirs, self.links)  # (never returns)
        finally:
            _unblock_interrupts(blocked)
        for end in theirs:
            end.close()

    def submit(self, index: int, task: Task) -> None:
        self.queue.append((index, task))

    def poll(self, wait: bool = False, every: float = 0.0) -> None:
        """Take the results sent so far (or wait for one, `wait`), then give each waiting worker a
        task. `every`: not again within that many seconds of the last time (a poll costs a system
        call and a selector; asking for each of a tree's files costs more than the waits it saves)."""
        from multiprocessing.connection import wait as ready

        if every:
            now = time.monotonic()
            if now - self.polled < every:
                return
            self.polled = now
        busy = [link for link, held in self.held.items() if held is not None]
        for link in ready(busy, None if wait else 0) if busy else ():
            index, task = self.held[link]  # type: ignore[misc]
            try:
                result = link.recv()
            except (EOFError, OSError):  # the worker died (with its task, if it had started)
                self._lost(link)
                if task is not None:
                    self.results[index] = _alone(task)
                continue
            except Exception as exc:  # noqa: BLE001 - a result that does not unpickle here (read whole: the worker goes on)
                result = FileResult(task.path, error=internal_error(exc)) if task is not None else None
            if task is not None:
                self.results[index] = result
            self.held[link] = None
        for link in [link for link, held in self.held.items() if held is None]:
            if not self.queue:
                break
            index, task = self.held[link] = self.queue.popleft()
            try:
                link.send(task)
            except (OSError, ValueError):  # the worker is gone: the task goes to another one
                self._lost(link)
                self.queue.appendleft((index, task))

    def result(self, index: int) -> FileResult:
        while index not in self.results:
            if not self.held:  # every worker died: what is left runs alone
                index_task = self.queue.popleft()
                self.results[index_task[0]] = _alone(index_task[1])
                continue
            self.poll(wait=any(held is not None for held in self.held.values()))  # (some are: a worker starting, or busy)
        return self.results.pop(index)

    def _lost(self, link) -> None:
        del self.held[link]
        link.close()

    def close(self) -> None:
        # A worker stops when its connection ends (after the task it holds, if any); the host when
        # its workers have.
        for link in self.held:
            link.close()
        self.held.clear()
        self.queue.clear()
        try:
            os.waitpid(self.host, 0)
        except ChildProcessError:
            pass


_STARTING = (-1, None)
# How often, at most, `_Run.add` asks the workers for results between the files it sends them: a
# worker waits at most this long for its next task while files are read (a poll takes some 20 µs).
_POLL_INTERVAL = 0.002


def _block_interrupts() -> bool:
    """Hold SIGINT back in this thread (where the platform can); whether it was held back here."""
    if not hasattr(signal, "pthread_sigmask"):
        return False
    return signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _unblock_interrupts(blocked: bool) -> None:
    if blocked and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _host(ends, others) -> None:
    """The host process: import the analysis, fork one worker per connection, wait for them, exit.
    Ctrl-C is left to the process that started it, which stops the workers (by closing their
    connections); neither runs that process's exit handlers or flushes its buffers (`os._exit`)."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _unblock_interrupts(True)
        for link in others:
            link.close()
        try:
            _preload()
        except BaseException:  # noqa: BLE001 - each worker then imports what a file needs, and reports what fails
            pass
        # What is imported lives as long as the workers: out of the collector's sight, whose passes
        # would otherwise write into every object of it and so copy each page a worker shares.
        gc.freeze()
        workers = []
        for k, end in enumerate(ends):
            try:
                pid = os.fork()
            except OSError:  # that worker's connection ends when this process closes it: one worker less
                continue
            if pid == 0:
                try:
                    for other in ends[:k] + ends[k + 1:]:
                        other.close()
                    _serve(end)
                finally:
                    os._exit(0)
            workers.append(pid)
        for end in ends:
            end.close()
        for pid in workers:
            os.waitpid(pid, 0)
    finally:
        os._exit(0)


def _serve(link) -> None:
    """A worker: say it is ready, then lint each task received and send its result back, until the
    connection ends."""
    try:
        link.send(None)
    except OSError:
        return
    while True:
        try:
            task = link.recv()
        except (EOFError, OSError):
            return
        result = lint_task(task)
        try:
            link.send(result)
        except OSError:  # the other end is gone
            return
        except Exception as exc:  # noqa: BLE001 - a result that does not pickle (nothing was sent)
            link.send(FileResult(task.path, error=internal_error(exc)))


class _Executor:
    """The workers of a `concurrent.futures` pool, each importing the analysis as it starts, behind
    `_Hosted`'s interface: where a fork of this process is not the platform's way (`_HOSTED`)."""

    def __init__(self, workers: int) -> None:
        self.executor = _pool(workers)
        self.futures: Dict[int, object] = {}
        self.tasks: Dict[int, Task] = {}

    def submit(self, index: int, task: Task) -> None:
        self.tasks[index] = task
        try:
            self.futures[index] = self.executor.submit(lint_task, task)
        except Exception:  # noqa: BLE001 - a broken pool: `result` lints the file alone
            pass

    def poll(self, wait: bool = False, every: float = 0.0) -> None:
        pass  # (the pool's own thread feeds its workers)

    def result(self, index: int) -> FileResult:
        from concurrent.futures.process import BrokenProcessPool

        task = self.tasks.pop(index)
        future = self.futures.pop(index, None)
        if future is None:
            return _alone(task)
        try:
            return future.result()
        except BrokenProcessPool:
            return _alone(task)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that did not pickle
            return FileResult(task.path, error=internal_error(exc))

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


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
