"""gradfix on real trees it has never seen: the installed torch sources and the standard library.

`gradfix check` and `gradfix fix` (a dry run: nothing is written) over a
deterministic sample of each tree plus every file that passes the
prefilter's token stage must never crash: no traceback, an exit code in
{0, 1, 2}, every error one line naming its file, no internal error, no file
changed. The rules themselves also run, prefilter bypassed, on a smaller
sample of real files, so the analysis meets code nobody wrote for it.

And a run over files no rule can match does not import libcst at all.

The torch part is skipped where torch is not installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = 150  # files per tree, besides the prefilter's candidates
RULE_SAMPLE = 20  # files per tree on which every rule runs without the prefilter
RULE_MAX_BYTES = 8_000
SKIPPED_DIRS = {"site-packages", "__pycache__"}


def _tree(name: str) -> Optional[Path]:
    if name == "stdlib":
        return Path(sysconfig.get_paths()["stdlib"])
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _python_files(tree: Path) -> List[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        found.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith((".py", ".pyi")))
    return found


def _every_kth(files: List[Path], count: int) -> List[Path]:
    step = max(1, len(files) // count)
    return files[::step][:count]


def _sample(tree: Path) -> List[Path]:
    """A deterministic sample of `tree`, plus every file that passes the prefilter's token stage (default rules)."""
    from gradfix.engine import prefilter
    from gradfix.rules import select

    files = _python_files(tree)
    chosen = set(_every_kth(files, SAMPLE))
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if prefilter(data, select(None), parse=False):
            chosen.add(path)
    return sorted(chosen)


TREES = [
    pytest.param("stdlib", id="stdlib"),
    pytest.param("torch", id="torch"),
]


def _require(name: str) -> Path:
    tree = _tree(name)
    if tree is None or not tree.is_dir():
        pytest.skip(f"{name} is not installed")
    return tree


def _digest(paths: List[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path).encode())
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"?")
    return h.hexdigest()


def _gradfix(args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, GRADFIX_CACHE_DIR=str(cwd / "cache"), NO_COLOR="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "gradfix", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


SUMMARY_PREFIXES = ("Found ", "All checks passed", "Would fix ", "Fixed ", "No ")


def _assert_no_crash(proc: subprocess.CompletedProcess, files: List[Path]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in (0, 1, 2), (proc.returncode, proc.stderr[-3000:])
    names = {str(p) for p in files}
    for line in proc.stderr.splitlines():
        if not line.strip() or line.startswith(SUMMARY_PREFIXES) or line.endswith("could not be checked."):
            continue
        named = line.split(":", 1)[0]
        assert named in names, f"an error line that names no input file: {line!r}"
        assert "internal error" not in line, line


@pytest.mark.parametrize("name", TREES)
def test_check_and_dry_run_fix_never_crash_on_a_real_tree(name, tmp_path):
    tree = _require(name)
    files = _sample(tree)
    assert len(files) >= min(SAMPLE, len(_python_files(tree))) // 2
    before = _digest(files)
    args = [str(p) for p in files]

    checked = _gradfix(["check", *args], tmp_path)
    _assert_no_crash(checked, files)

    fixed = _gradfix(["fix", *args], tmp_path)  # no --apply: a diff on stdout, nothing written
    _assert_no_crash(fixed, files)
    assert _digest(files) == before, "a dry run changed a file"


@pytest.mark.parametrize("name", TREES)
def test_rules_without_the_prefilter_never_crash_on_real_files(name):
    """The analysis itself, on real code: the prefilter would skip nearly all of it."""
    from gradfix.engine import _parse, _run
    from gradfix.rules import ALL_RULES

    tree = _require(name)
    small = []
    for path in _python_files(tree):
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if 0 < size <= RULE_MAX_BYTES:
            small.append(path)
    crashes = []
    for path in _every_kth(small, RULE_SAMPLE):
        parsed = _parse(path.read_bytes())
        if isinstance(parsed, str):
            continue  # reported as one line by the engine
        try:
            _run(parsed, str(path), ALL_RULES)
        except RecursionError:
            continue  # the engine reports it as one line
        except Exception as exc:  # noqa: BLE001
            crashes.append(f"{path}: {type(exc).__name__}: {exc}")
    assert not crashes, "\n".join(crashes)


def test_a_run_without_candidates_never_imports_libcst(tmp_path):
    (tmp_path / "plain.py").write_text("import torch\n\nx = torch.randn(3)\nprint(x.sum())\n")
    (tmp_path / "tokens_only.py").write_text("# mentions detach and backward but calls neither\ny = 1\n")
    script = textwrap.dedent(
        """
        import json, sys
        from gradfix.cli import main
        try:
            main([%r, %r], prog_name="gradfix")
        except SystemExit as exc:
            code = exc.code
        print(json.dumps({"code": code, "libcst": sorted(m for m in sys.modules if m.split(".")[0] == "libcst")}))
        """
    ) % ("check", str(tmp_path))
    env = dict(os.environ, GRADFIX_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, proc.stderr
    assert report["libcst"] == [], f"libcst imported by a run with nothing to parse: {report['libcst'][:5]}"


# ---------------------------------------------------------------------------
# The machinery of whole-tree runs: worker processes and the result cache.


def _fixture_tasks(limit: int = 24):
    from gradfix.options import LintOptions
    from gradfix.parallel import Task
    from gradfix.rules import ALL_RULES

    options = LintOptions(tuple(r.CODE for r in ALL_RULES))
    paths = sorted((ROOT / "fixtures").rglob("*.py"))
    paths = [p for p in paths if not p.name.endswith(".fixed.py")][:limit]
    tasks = [Task(str(p), p.read_bytes(), options) for p in paths]
    # Files the token stage rejects, a syntax error and undecodable bytes, between the fixtures.
    tasks.insert(3, Task("plain.py", b"x = 1\n", options))
    tasks.insert(7, Task("broken.py", b"l1 = f(x.detach(), y)\nl1.backward(retain_graph=True)\ndef (:\n", options))
    tasks.insert(11, Task("bytes.py", b"# \xff\xfe\nl1.backward(retain_graph=True)\nx.detach()\n", options))
    return tasks


def _summary(results):
    return [
        (r.path, r.error, r.fixed, r.applied, r.suppressed,
         [(f.line, f.col, f.code, f.message, f.fixable, f.edits) for f in r.findings])
        for r in results
    ]


@pytest.fixture(params=["hosted", "executor"])
def pool_kind(request, monkeypatch):
    """Both ways of starting workers: forked from one host process that imported the analysis
    (Linux), and a `concurrent.futures` pool (elsewhere)."""
    from gradfix import parallel

    if request.param == "hosted" and not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    monkeypatch.setattr(parallel, "_HOSTED", request.param == "hosted")
    return request.param


def test_worker_processes_give_the_serial_results_in_input_order(pool_kind):
    import pickle

    from gradfix import parallel

    # (The pool of `concurrent.futures` only starts and feeds the workers: fewer files suffice.)
    tasks = _fixture_tasks(24 if pool_kind == "hosted" else 12)
    serial = list(parallel.lint_many(1, tasks))
    assert [r.path for r in serial] == [t.path for t in tasks]
    assert any(r.findings for r in serial) and any(r.error for r in serial)
    workers = list(parallel.lint_many(2, tasks))
    assert _summary(workers) == _summary(serial)
    # No libcst node crosses a process boundary, or reaches the caller: a fix is its text edits.
    assert all(f.fix is None or f.fix.edits for r in serial for f in r.findings + r.remaining)
    pickle.dumps(workers)

    fixing = [t._replace(options=replace(t.options, fix=True)) for t in tasks]
    assert _summary(parallel.lint_many(2, fixing)) == _summary(parallel.lint_many(1, fixing))


def _past_the_token_stage(tasks):
    """The indexes of the tasks whose files pass the prefilter's token stage (what `lint_many` sends on)."""
    from gradfix import parallel

    return [i for i, t in enumerate(tasks) if parallel.prefilter(t.data, parallel.rule_modules(t.options.codes), parse=False)]


def test_prechecks_in_the_workers_give_the_serial_results(monkeypatch):
    """Past `PARALLEL_PRECHECK_BYTES` of text, every file past the token stage goes to the workers,
    which run the whole prefilter there: the results are those of the serial run."""
    from gradfix import parallel

    tasks = _fixture_tasks()
    serial = list(parallel.lint_many(1, tasks))
    sent = []
    real = parallel._Run._submit
    monkeypatch.setattr(parallel._Run, "_submit", lambda run, indexes: sent.extend(indexes) or real(run, indexes))
    monkeypatch.setattr(parallel, "PARALLEL_PRECHECK_BYTES", 0)
    assert _summary(parallel.lint_many(2, tasks)) == _summary(serial)
    # every file past the token stage went, the precheck's rejects too, each once
    passed = _past_the_token_stage(tasks)
    assert sorted(sent) == passed


def test_workers_start_while_the_files_are_still_read(monkeypatch):
    """`lint_many` consumes a lazy iterable of tasks: the workers start as soon as enough text has
    passed the token stage, before the iterable is done, and the results keep the input order."""
    from gradfix import parallel

    tasks = _fixture_tasks()
    passed = _past_the_token_stage(tasks)
    assert len(passed) >= 3
    read = []
    started = []
    real = parallel._Run._start
    monkeypatch.setattr(parallel._Run, "_start", lambda run, indexes: started.append((len(read), list(indexes))) or real(run, indexes))
    # the second file past the token stage crosses the threshold
    monkeypatch.setattr(parallel, "PARALLEL_PRECHECK_BYTES", len(tasks[passed[0]].data) + 1)

    def lazily():
        for task in tasks:
            read.append(task.path)
            yield task

    results = parallel.lint_many(2, lazily())
    assert started == [(passed[1] + 1, passed[:2])]
    assert _summary(results) == _summary(parallel.lint_many(1, tasks))


class _Fatal(bytes):
    """Bytes whose unpickling ends the process: a worker that receives them dies, as in a crash in
    native code (this process reads them as plain bytes)."""

    def __reduce__(self):
        import os

        return (os._exit, (3,))


def test_a_worker_that_dies_costs_its_file_only(pool_kind):
    """A dead worker breaks the pool: every file it held is retried alone, and the one that kills
    its worker again gets a one-line error; the others get their serial results."""
    from gradfix import parallel

    tasks = _fixture_tasks(6)
    serial = list(parallel.lint_many(1, tasks))
    passed = _past_the_token_stage(tasks)
    fatal = passed[1]
    tasks[fatal] = tasks[fatal]._replace(data=_Fatal(tasks[fatal].data))
    results = list(parallel.lint_many(2, tasks))
    assert results[fatal].error == "internal error: the worker process linting this file died (a crash in native code, or out of memory)"
    others = [i for i in range(len(tasks)) if i != fatal]
    assert _summary([results[i] for i in others]) == _summary([serial[i] for i in others])


class _Unreadable(str):
    """A path whose unpickling fails in the process that made it, and only there: a worker's
    result naming it cannot be read back (as a result that does not unpickle would)."""

    def __reduce__(self):
        return (_unreadable, (str(self), _MAIN_PID))


_MAIN_PID = os.getpid()


def _unreadable(text: str, main: int) -> str:
    if os.getpid() == main:
        raise RuntimeError("a result this process cannot read")
    return _Unreadable(text)


def test_a_result_that_cannot_be_read_back_costs_its_file_only(monkeypatch):
    """The file gets a one-line internal error; its worker and the other files go on."""
    from gradfix import parallel

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    monkeypatch.setattr(parallel, "_HOSTED", True)
    monkeypatch.setattr(sys.modules[__name__], "_MAIN_PID", os.getpid())
    tasks = _fixture_tasks(12)
    serial = list(parallel.lint_many(1, tasks))
    bad = _past_the_token_stage(tasks)[1]
    tasks[bad] = tasks[bad]._replace(path=_Unreadable(tasks[bad].path))
    results = list(parallel.lint_many(2, tasks))
    assert results[bad].error.startswith("internal error: RuntimeError: a result this process cannot read")
    others = [i for i in range(len(tasks)) if i != bad]
    assert _summary([results[i] for i in others]) == _summary([serial[i] for i in others])


def test_the_host_imports_the_analysis_once_for_all_its_workers(tmp_path, monkeypatch):
    """`_Hosted`: the analysis is imported by one process forked from this one, whose forks are the
    workers; a `concurrent.futures` pool imports it in each worker."""
    from gradfix import parallel

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    log = tmp_path / "preloads"
    real = parallel._preload

    def preload():
        with open(log, "a") as out:
            out.write(f"{os.getpid()}\n")
        real()

    monkeypatch.setattr(parallel, "_preload", preload)
    tasks = _fixture_tasks(12)
    serial = _summary(parallel.lint_many(1, tasks))
    for hosted, count in ((True, 1), (False, 3)):
        log.write_text("")
        monkeypatch.setattr(parallel, "_HOSTED", hosted)
        assert _summary(parallel.lint_many(3, tasks)) == serial
        pids = log.read_text().split()
        assert len(pids) == count and str(os.getpid()) not in pids


@pytest.mark.parametrize("failing", [1, 3])
def test_workers_the_host_cannot_fork_cost_no_file(monkeypatch, failing):
    """A worker the host fails to fork (EAGAIN) is one worker less; with none, each file is linted
    in a pool of its own: the results are the serial run's either way."""
    import errno

    from gradfix import parallel

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    tasks = _fixture_tasks(12)
    serial = _summary(parallel.lint_many(1, tasks))
    monkeypatch.setattr(parallel, "_HOSTED", True)
    real, caller, refused = os.fork, os.getpid(), []

    def fork():
        if os.getpid() != caller and len(refused) < failing:  # (in the host: its first forks fail)
            refused.append(1)
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return real()

    monkeypatch.setattr(parallel.os, "fork", fork)
    assert _summary(parallel.lint_many(3, tasks)) == serial


def test_a_consumer_that_stops_early_leaves_no_process_behind(monkeypatch):
    """The host and its workers are gone (and reaped) once the results' iterator is closed."""
    from gradfix import parallel

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    monkeypatch.setattr(parallel, "_HOSTED", True)
    made = []
    real = parallel._Hosted.__init__

    def init(pool, workers):
        real(pool, workers)
        made.append(pool.host)

    monkeypatch.setattr(parallel._Hosted, "__init__", init)
    results = parallel.lint_many(2, _fixture_tasks(12))
    next(results)
    results.close()
    assert len(made) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(made[0], os.WNOHANG)  # reaped: no longer this process's child


def test_the_cache_returns_what_was_computed_and_never_fails_a_run(tmp_path):
    from gradfix import parallel
    from gradfix.cache import Cache

    tasks = _fixture_tasks(12)
    fresh = list(parallel.lint_many(1, tasks))
    first = Cache(tmp_path / "c")
    assert _summary(parallel.lint_many(1, tasks, cache=first)) == _summary(fresh)
    assert first.hits == 0 and first.misses > 0
    second = Cache(tmp_path / "c")
    assert _summary(parallel.lint_many(2, tasks, cache=second)) == _summary(fresh)
    assert second.hits == first.misses and second.misses == 0
    assert (tmp_path / "c" / ".gitignore").read_text().strip().endswith("*")

    # The path is not part of the key: an identical file elsewhere is a hit, labelled with its own path.
    data, options = tasks[0].data, tasks[0].options
    key = Cache.key(data, options)
    moved = second.get(key, "elsewhere.py")
    assert moved is not None and all(f.path == "elsewhere.py" for f in moved.findings)
    # Settings are: another rule set, flag or op import is another entry.
    assert len({key, Cache.key(data, replace(options, codes=("GF001",))), Cache.key(data, replace(options, grad_scale_import="inline")),
                Cache.key(data, replace(options, fix=True))}) == 4

    # A corrupt entry is a miss; an unwritable cache is no cache.
    for entry in (tmp_path / "c").rglob("*.json"):
        entry.write_bytes(b'{"schema": 1, "key": "tru')
    third = Cache(tmp_path / "c")
    assert _summary(parallel.lint_many(1, tasks, cache=third)) == _summary(fresh) and third.hits == 0
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert _summary(parallel.lint_many(1, tasks, cache=Cache(blocked / "c"))) == _summary(fresh)


def _hammer(directory: str, rounds: int) -> int:
    from gradfix.cache import Cache
    from gradfix.engine import FileResult

    cache = Cache(directory)
    for i in range(rounds):
        cache.put(f"{i % 7:02d}" + "ab" * 31, FileResult("x.py", error=f"1:1: entry {i % 7}"))
        cache.get(f"{(i + 3) % 7:02d}" + "ab" * 31, "x.py")
    return cache.hits


def test_concurrent_runs_share_a_cache_directory_safely(tmp_path):
    from concurrent.futures import ProcessPoolExecutor

    from gradfix.cache import Cache

    with ProcessPoolExecutor(max_workers=3) as pool:
        list(pool.map(_hammer, [str(tmp_path)] * 3, [150] * 3))
    cache = Cache(tmp_path)
    for i in range(7):
        hit = cache.get(f"{i:02d}" + "ab" * 31, "y.py")
        assert hit is not None and hit.error == f"1:1: entry {i}" and hit.path == "y.py"
    assert not [p for p in tmp_path.rglob("*tmp")], "temporary files left behind"
