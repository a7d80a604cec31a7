"""Execute an original and a rewritten snippet, compare their state, time them.

Snippet protocol
----------------
A snippet is a Python source file.  It runs in a fresh namespace holding
``__name__ = "__gradfix_snippet__"``, ``__file__`` (the snippet's path) and
``DEVICE`` (a ``torch.device``), after ``torch.manual_seed(seed)`` (and
``torch.cuda.manual_seed_all(seed)`` on CUDA), with grad mode on, float32 as
the default dtype and the chosen device as torch's default device, so
``torch.randn(...)`` lands on it without the snippet saying so (the previous
defaults are restored afterwards).  Module-level code is setup.  If it
defines a callable ``step``, ``step()`` is called once: that is the training
step compared, and timing calls ``step()`` again and again, so ``step`` must
be re-runnable (build the graph inside it).  Without ``step``, executing the
module is the step, and timing re-executes the whole module.  The snippet's
printed output is discarded.  Afterwards the state is collected from the
namespace: every reachable tensor (its value, and its ``.grad`` for leaves
that require grad: None and a tensor of zeros differ), every ``nn.Module``'s
parameters (value and grad) and buffers, and Python numbers, following
lists, tuples, dicts and plain objects' attributes (a trainer's ``self.net``,
``self.history``) to a limited depth; modules, functions, classes,
optimizers, ``DEVICE`` and names starting with ``__`` (dunders, and what
``torch.compile`` injects) are skipped.  Keys are paths such as
``trainer.net.0.weight.grad`` or ``history[3]``.  Every key of the original
must exist in the rewritten state with an equal value, within a tolerance
tied to the dtype (float64: rtol 1e-10, atol 1e-12; float32 and Python
floats: rtol 1e-5, atol 1e-6; float16/bfloat16: rtol 2e-2, atol 1e-3;
integers and bools exact; NaN positions must agree); names only the
rewrite introduced are ignored.  Because module-level names are part of the
state, a temporary that the rewrite drops (``l2 = ...``) must stay local to
``step()`` or it is reported as missing.

Two things the rewrite does not change but rounding does are not reported as
mismatches: under ``torch.autocast`` with a 16-bit dtype in the original's
source, float32 values are compared with that dtype's tolerance
(:func:`gradfix.harness.compare.autocast_dtype`); and a parameter whose
value differs only after optimizer steps whose gradients agreed within
tolerance is OK with a note (:mod:`gradfix.harness.steps`).  The verdict
is a mismatch when the rewrite raises where the original ran (or fails to
compile); an original that raises is an error in the snippet.

The whole run (comparison and timing) uses ``threads`` CPU threads for torch
(default 1, see :mod:`gradfix.harness.timing`); the caller's count is
restored afterwards, also when a snippet calls ``torch.set_num_threads``
itself (the count a snippet's setup leaves is re-applied before each of its
steps, and reported).  Timing runs each side in its own fresh namespace:
after a warm-up, ``repeat`` rounds each call both sides, alternating which
goes first (A B, B A, ...), with the cyclic garbage collector off inside the
timed calls.  The report gives each side's median and interquartile range,
and the speedup: the median and interquartile range of the per-round ratios
(each round's two calls ran back to back, so each ratio is a paired figure).
"""

from __future__ import annotations

import contextlib
import gc
import io
import math
import re
import sys
import time
import traceback
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import torch

from gradfix.harness.coverage import changed_hunks, lines_run, unrun

from gradfix.harness.compare import (
    Row,
    autocast_dtype,
    collect_state,
    compare_states,
    compare_tensors,
    effective_tolerance,
)
from gradfix.harness.steps import StepRecorder, explain_amplified
from gradfix.harness.timing import (
    DEFAULT_THREADS,
    WARMUP_MAX_ROUNDS,
    WARMUP_ROUNDS,
    WARMUP_SECONDS,
    Spread,
    abba,
    timed_call,
    torch_threads,
)

__all__ = [
    "DeviceUnavailable",
    "SnippetError",
    "PairReport",
    "resolve_device",
    "run_snippet",
    "verify_pair",
    "format_report",
]

SNIPPET_MODULE = "__gradfix_snippet__"


class DeviceUnavailable(RuntimeError):
    """The requested device cannot be used here (e.g. CUDA without a GPU)."""


class SnippetError(Exception):
    """An exception raised while executing a snippet, with where it happened.

    ``side`` is "original" or "rewritten" (None from :func:`run_snippet`),
    ``phase`` is "setup" (module code), "step" (the ``step()`` call) or
    "timing", ``lineno`` the snippet line from the traceback (or None).
    """

    def __init__(
        self,
        exc_type: str,
        message: str,
        *,
        filename: str,
        lineno: Optional[int],
        line: str = "",
        phase: str = "setup",
        side: Optional[str] = None,
    ) -> None:
        self.exc_type = exc_type
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.line = line
        self.phase = phase
        self.side = side
        super().__init__(exc_type, message)

    def __str__(self) -> str:
        where = self.filename if self.lineno is None else f"{self.filename}, line {self.lineno}"
        if self.line:
            where += f": {self.line}"
        prefix = f"{self.side} " if self.side else ""
        return f"{prefix}{self.phase} failed: {self.one_line()} ({where})"

    def one_line(self) -> str:
        """``Type: message`` with the message's first non-empty line only."""
        first = next((line.strip() for line in self.message.splitlines() if line.strip()), "")
        return f"{self.exc_type}: {first}" if first else self.exc_type

    def location(self) -> str:
        where = self.filename if self.lineno is None else f"{self.filename}, line {self.lineno}"
        return f"{where}: {self.line}" if self.line else where


@dataclass
class PairReport:
    """Outcome of :func:`verify_pair`.

    ``ok`` is True when both snippets ran and every row matched.  ``error``
    describes a snippet failure (``error_side`` / ``error_line`` locate it)
    or a protocol problem.  Timing fields are None when not measured;
    ``timing_error`` says why when timing itself failed.

    ``threads`` is torch's CPU thread count for the run (what was asked
    for, or torch's count when nothing was); ``orig_threads`` and
    ``new_threads`` are the counts in effect during each side's timed calls,
    which differ from it only when a snippet sets its own.  ``orig_ms`` and
    ``new_ms`` are medians, ``orig_spread`` / ``new_spread`` the per-call
    figures behind them, ``speedup_spread`` summarises the per-round ratios
    original/rewritten and ``speedup`` is their median.  ``warmup`` is the
    number of untimed rounds run first.

    ``rewrite_raised`` is True when the original ran and the rewrite raised
    (or did not compile): a mismatch, not a snippet error; ``error`` then
    describes the exception, ``rewrite_exception`` is its one-line
    ``Type: message`` and ``rewrite_where`` the phase and snippet line.  ``compute_dtype`` is the autocast dtype whose
    tolerance applied to float32 values (None when the original enters no
    autocast), ``compute_source`` the call that set it (``line N: text``).
    """

    filename: str
    device: str
    rows: List[Row] = field(default_factory=list)
    ok: bool = False
    error: Optional[str] = None
    timed_step: bool = False
    orig_ms: Optional[float] = None
    new_ms: Optional[float] = None
    speedup: Optional[float] = None
    repeat: int = 0
    error_side: Optional[str] = None
    error_line: Optional[int] = None
    timing_error: Optional[str] = None
    threads: Optional[int] = None
    orig_threads: Optional[int] = None
    new_threads: Optional[int] = None
    orig_spread: Optional[Spread] = None
    new_spread: Optional[Spread] = None
    speedup_spread: Optional[Spread] = None
    warmup: int = 0
    rewrite_raised: bool = False
    rewrite_exception: Optional[str] = None
    rewrite_where: Optional[str] = None
    # The line of a module-level `if __name__ == "__main__":` in the original: its block does not
    # run under verify (the snippet's name is SNIPPET_MODULE), so what only it reaches is not compared.
    main_guard_line: Optional[int] = None
    # The changed hunks of the rewrite (line ranges of the rewritten source) none of whose
    # statements ran in the compared run: an OK would say nothing about them.
    unrun: List[Tuple[int, int]] = field(default_factory=list)
    # Whether the snippet may compile code (`torch.compile`): its compiled lines run without line
    # events, so unrun hunks are a note there, not the verdict.
    may_compile: bool = False
    compute_dtype: Optional[torch.dtype] = None
    compute_source: Optional[str] = None


# ------------------------------------------------------------------ devices


def resolve_device(name: str) -> str:
    """Map "cpu", "cuda", "cuda:N" or "auto" to a usable device string.

    Raises :class:`DeviceUnavailable` for CUDA where there is none, and
    ``ValueError`` for a name it does not know.
    """
    n = name.strip().lower()
    if n == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if n == "cpu":
        return "cpu"
    if n == "cuda" or n.startswith("cuda:"):
        if not torch.cuda.is_available():
            built = (
                "built without CUDA"
                if torch.version.cuda is None
                else f"built with CUDA {torch.version.cuda}, but no usable GPU or driver"
            )
            raise DeviceUnavailable(
                f"CUDA was requested but torch.cuda.is_available() is False "
                f"(torch {torch.__version__}, {built})"
            )
        if n != "cuda":
            index = n.split(":", 1)[1]
            if not index.isdigit() or int(index) >= torch.cuda.device_count():
                raise DeviceUnavailable(
                    f"{name!r} was requested but only {torch.cuda.device_count()} CUDA device(s) exist"
                )
        return n
    raise ValueError(f"unknown device {name!r}: expected 'cpu', 'cuda', 'cuda:N' or 'auto'")


def _is_cuda(device: str) -> bool:
    return torch.device(device).type == "cuda"


def _set_default_device(device: torch.device) -> None:
    # CPU is torch's built-in default; installing a device mode for it would
    # only add a per-call cost to every torch function and skew timings.
    torch.set_default_device(None if device.type == "cpu" else device)


@contextlib.contextmanager
def _torch_defaults(device: str) -> Iterator[None]:
    """Make ``device`` the default for the block; restore torch's globals after.

    The caller's random state and CPU thread count are restored too, so
    running a snippet leaves no trace in the process that verifies it.
    """
    prev_threads = torch.get_num_threads()
    prev_device = torch.get_default_device()
    prev_dtype = torch.get_default_dtype()
    prev_grad = torch.is_grad_enabled()
    prev_deterministic = torch.are_deterministic_algorithms_enabled()
    prev_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    cuda_devices = list(range(torch.cuda.device_count())) if _is_cuda(device) else []
    with torch.random.fork_rng(devices=cuda_devices):
        _set_default_device(torch.device(device))
        try:
            yield
        finally:
            _set_default_device(prev_device)
            torch.set_default_dtype(prev_dtype)
            torch.set_grad_enabled(prev_grad)
            torch.use_deterministic_algorithms(prev_deterministic, warn_only=prev_warn_only)
            _set_threads(prev_threads)


def _set_threads(threads: int) -> None:
    # set_num_threads may rebuild the thread pool: only when it changes.
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


# ---------------------------------------------------------------- execution


@dataclass
class _Loaded:
    namespace: Dict[str, Any]
    step: Optional[Callable[[], Any]]
    # What the snippet's setup left as torch's defaults, re-applied before
    # each step() call (the other side may have changed them meanwhile).
    dtype: torch.dtype
    grad_enabled: bool
    threads: int

    def enter(self) -> None:
        torch.set_default_dtype(self.dtype)
        torch.set_grad_enabled(self.grad_enabled)
        _set_threads(self.threads)


def _error_from(exc: BaseException, code_filename: str, source: str, phase: str) -> SnippetError:
    lineno: Optional[int] = None
    if isinstance(exc, SyntaxError) and exc.filename == code_filename:
        lineno = exc.lineno
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == code_filename:
            lineno = frame.lineno
    line = ""
    if lineno is not None:
        lines = source.splitlines()
        if 1 <= lineno <= len(lines):
            line = lines[lineno - 1].strip()
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    return SnippetError(
        type(exc).__name__, message, filename=code_filename, lineno=lineno, line=line, phase=phase
    )


@contextlib.contextmanager
def _captured(source: str, filename: str, phase: str) -> Iterator[None]:
    """Turn any exception from snippet code into a SnippetError; hide its prints."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    except (Exception, SystemExit) as exc:  # SystemExit: a snippet calling sys.exit()
        raise _error_from(exc, filename, source, phase) from exc


@contextlib.contextmanager
def _registered(module: types.ModuleType) -> Iterator[None]:
    # In sys.modules while its code runs, so that dataclasses, typing and
    # pickle can find the snippet's module by name.
    previous = sys.modules.get(SNIPPET_MODULE)
    sys.modules[SNIPPET_MODULE] = module
    try:
        yield
    finally:
        if previous is None:
            sys.modules.pop(SNIPPET_MODULE, None)
        else:
            sys.modules[SNIPPET_MODULE] = previous


def _new_namespace(filename: str, device: str) -> types.ModuleType:
    module = types.ModuleType(SNIPPET_MODULE)
    module.__dict__.update(__file__=filename, DEVICE=torch.device(device))
    return module


def _compile(source: str, filename: str) -> types.CodeType:
    with _captured(source, filename, "setup"):
        return compile(source, filename, "exec", dont_inherit=True)


def _seed(seed: int, device: str) -> None:
    torch.manual_seed(seed)
    if _is_cuda(device):
        torch.cuda.manual_seed_all(seed)


def _fresh_defaults(seed: int, device: str, threads: int) -> None:
    """What every snippet starts from: the seed, float32, grad mode, the run's thread count."""
    _seed(seed, device)
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    _set_threads(threads)


def _load(code: types.CodeType, source: str, filename: str, device: str, seed: int, threads: int) -> _Loaded:
    """Execute the module-level code in a fresh namespace (inside _torch_defaults)."""
    _fresh_defaults(seed, device, threads)
    module = _new_namespace(filename, device)
    namespace = module.__dict__
    with _captured(source, filename, "setup"), _registered(module):
        exec(code, namespace)
    step = namespace.get("step")
    return _Loaded(
        namespace,
        step if callable(step) else None,
        torch.get_default_dtype(),
        torch.is_grad_enabled(),
        torch.get_num_threads(),
    )


@dataclass
class _Outcome:
    """One side's compared run: its state, whether it has step(), its optimizer steps, tensor identities."""

    state: Dict[str, Any]
    stepped: bool
    steps: StepRecorder
    ids: Dict[str, int]
    # Keeps the namespace (and so the tensors behind `ids`) alive until compared.
    namespace: Dict[str, Any]


def _run(source: str, filename: str, device: str, seed: int, ran: Optional[Set[int]] = None) -> _Outcome:
    """One side's compared run; `ran`, when given, receives the snippet's lines that ran."""
    code = _compile(source, filename)
    threads = torch.get_num_threads()
    steps = StepRecorder()
    ids: Dict[str, int] = {}
    traced = lines_run(filename, ran) if ran is not None else contextlib.nullcontext()
    with _torch_defaults(device), steps.recording():
        with traced:
            loaded = _load(code, source, filename, device, seed, threads)
            if loaded.step is not None:
                with _captured(source, filename, "step"):
                    loaded.step()
        try:
            state = collect_state(loaded.namespace, ids)
        except Exception as exc:  # an object the walk could not read
            raise SnippetError(
                type(exc).__name__, str(exc), filename=filename, lineno=None, phase="state collection"
            ) from exc
    return _Outcome(state, loaded.step is not None, steps, ids, loaded.namespace)


def run_snippet(
    source: str, *, filename: str, device: str = "cpu", seed: int = 0, threads: Optional[int] = None
) -> Dict[str, object]:
    """Execute one snippet per the protocol and return its collected state.

    ``threads``: torch's CPU thread count while it runs (None: as it is).
    Raises :class:`SnippetError` when the snippet raises (or does not compile).
    """
    device = resolve_device(device)
    with torch_threads(threads):
        return _run(source, filename, device, seed).state


# ------------------------------------------------------------------- timing


@dataclass
class _Timings:
    orig: List[float]
    new: List[float]
    timed_step: bool
    orig_threads: Optional[int]
    new_threads: Optional[int]
    warmup: int


def _time_pair(
    original: str, rewritten: str, filename: str, device: str, seed: int, repeat: int
) -> _Timings:
    """Per-call ms of each side over ``repeat`` ABBA rounds (see the module doc)."""
    cuda = _is_cuda(device)
    threads = torch.get_num_threads()
    sides = []
    with _torch_defaults(device):
        for side, source in (("original", original), ("rewritten", rewritten)):
            code = _compile(source, filename)
            try:
                loaded = _load(code, source, filename, device, seed, threads)
            except SnippetError as e:
                e.side, e.phase = side, "timing"
                raise
            sides.append((side, source, code, loaded))
        timed_step = all(s[3].step is not None for s in sides)
        seen_threads: List[Optional[int]] = [None, None]

        def call(index: int) -> float:
            side, source, code, loaded = sides[index]
            try:
                if timed_step:
                    loaded.enter()
                    fn: Callable[[], Any] = loaded.step  # type: ignore[assignment]
                else:
                    # Re-executing the module: a fresh namespace from the
                    # same starting point each time (outside the timed call).
                    _fresh_defaults(seed, device, threads)
                    module = _new_namespace(filename, device)

                    def fn() -> None:
                        with _registered(module):
                            exec(code, module.__dict__)
                with _captured(source, filename, "timing"):
                    if timed_step:
                        seen_threads[index] = torch.get_num_threads()
                        return timed_call(fn, cuda)
                    ms = timed_call(fn, cuda)
                    # the module's own set_num_threads, if any, ran inside
                    seen_threads[index] = torch.get_num_threads()
                    return ms
            except SnippetError as e:
                e.side = side
                raise

        # Warm-up: at least WARMUP_ROUNDS rounds, more until WARMUP_SECONDS.
        rounds = 0
        start = time.perf_counter()
        while rounds < WARMUP_ROUNDS or (
            time.perf_counter() - start < WARMUP_SECONDS and rounds < WARMUP_MAX_ROUNDS
        ):
            for i in abba(rounds):
                call(i)
            rounds += 1
        gc.collect()
        times: List[List[float]] = [[], []]
        for r in range(repeat):
            for i in abba(r):
                times[i].append(call(i))
    return _Timings(times[0], times[1], timed_step, seen_threads[0], seen_threads[1], rounds)


# ------------------------------------------------------------------- verify


def verify_pair(
    original: str,
    rewritten: str,
    *,
    filename: str,
    device: str = "cpu",
    repeat: int = 20,
    seed: int = 0,
    threads: Optional[int] = DEFAULT_THREADS,
) -> PairReport:
    """Run both snippets with the same seed, compare their state, and time them.

    ``threads``: torch's CPU thread count for the whole run (None: leave it
    as it is); the previous count is restored afterwards.  Snippet failures
    are reported in the result, never raised; an unavailable device raises
    :class:`DeviceUnavailable`, a thread count below 1 ``ValueError``.
    """
    device = resolve_device(device)
    with torch_threads(threads) as in_effect:
        report = PairReport(filename=filename, device=device, repeat=repeat, threads=in_effect)
        _verify_into(report, original, rewritten, filename, device, repeat, seed)
    return report


def _verify_into(
    report: PairReport, original: str, rewritten: str, filename: str, device: str, repeat: int, seed: int
) -> None:
    report.main_guard_line = _main_guard_line(original)
    report.may_compile = _MAY_COMPILE.search(original) is not None
    outcomes: List[_Outcome] = []
    # Both sides run traced, so that they run under the same conditions; the rewrite's lines tell
    # whether its changes ran at all.
    ran: Dict[str, Set[int]] = {"original": set(), "rewritten": set()}
    for side, source in (("original", original), ("rewritten", rewritten)):
        try:
            outcomes.append(_run(source, filename, device, seed, ran[side]))
        except SnippetError as e:
            e.side = side
            report.error, report.error_side, report.error_line = str(e), side, e.lineno
            if side == "rewritten":
                # The original ran: the rewrite raising is a difference in behaviour.
                report.rewrite_raised = True
                report.rewrite_exception = e.one_line()
                report.rewrite_where = f"in its {e.phase}, {e.location()}"
            return
    states = [o.state for o in outcomes]
    has_step = [o.stepped for o in outcomes]
    if has_step[0] != has_step[1]:
        which = "original" if has_step[0] else "rewritten"
        other = "rewritten" if has_step[0] else "original"
        report.error = f"the {which} snippet defines step() but the {other} does not"
        return
    report.timed_step = has_step[0]
    if not states[0]:
        report.error = (
            "nothing to compare: the original leaves no tensors, modules or numbers "
            "in its namespace"
        )
        return
    found = autocast_dtype(original)
    compute = found[0] if found is not None else None
    if found is not None:
        report.compute_dtype, report.compute_source = compute, f"line {found[1]}: {found[2]}"
    report.rows = compare_states(states[0], states[1], compute_dtype=compute)
    explain_amplified(
        report.rows, outcomes[0].steps, outcomes[1].steps, outcomes[0].ids, outcomes[1].ids,
        states[0], states[1], lambda a, b: compare_tensors(a, b, compute),
    )
    report.unrun = unrun(rewritten, changed_hunks(original, rewritten), ran["rewritten"])
    report.ok = all(r.ok for r in report.rows) and (not report.unrun or report.may_compile)
    del outcomes
    if repeat <= 0:
        return
    try:
        t = _time_pair(original, rewritten, filename, device, seed, repeat)
    except SnippetError as e:
        report.timing_error = str(e)
        return
    report.timed_step, report.warmup = t.timed_step, t.warmup
    report.orig_threads, report.new_threads = t.orig_threads, t.new_threads
    report.orig_spread, report.new_spread = Spread.of(t.orig), Spread.of(t.new)
    report.orig_ms, report.new_ms = report.orig_spread.median, report.new_spread.median
    # Each round times both sides back to back, so each round's ratio is a
    # paired measurement that shares the machine's state of the moment: the
    # speedup is their median (which then lies inside their reported IQR).
    ratios = [o / n for o, n in zip(t.orig, t.new) if n > 0]
    report.speedup_spread = Spread.of(ratios) if ratios else None
    report.speedup = report.speedup_spread.median if report.speedup_spread else None


# ------------------------------------------------------------------- report


def _num(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.1e}"


def _row_line(r: Row) -> str:
    status = "note    " if r.explained else "ok      " if r.ok else "MISMATCH"
    line = f"  {status} {r.key}: max abs {_num(r.max_abs)}, max rel {_num(r.max_rel)}"
    if r.note and (r.explained or not r.ok):
        line += f" ({r.note})"
    return line


def _count(rows: List[Row]) -> str:
    tensors = sum(1 for r in rows if r.kind == "tensor")
    numbers = len(rows) - tensors
    text = f"{tensors} tensor{'s' if tensors != 1 else ''}"
    if numbers:
        text += f" and {numbers} number{'s' if numbers != 1 else ''}"
    return text


def _worst(rows: List[Row], attr: str) -> Optional[float]:
    values = [getattr(r, attr) for r in rows if getattr(r, attr) is not None]
    return max(values, default=None)


# `torch.compile` and its relatives: code they compile runs without line events.
_MAY_COMPILE = re.compile(r"\bcompile\b")


def _lines_text(spans: List[Tuple[int, int]]) -> str:
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in spans]
    return ("line " if len(parts) == 1 and "-" not in parts[0] else "lines ") + ", ".join(parts)


def _main_guard_line(source: str) -> Optional[int]:
    """The line of the first module-level `if __name__ == "__main__":` of `source`, or None."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and {type(test.left), type(test.comparators[0])} == {ast.Name, ast.Constant}
            and "__name__" in (getattr(test.left, "id", None), getattr(test.comparators[0], "id", None))
            and "__main__" in (getattr(test.left, "value", None), getattr(test.comparators[0], "value", None))
        ):
            return node.lineno
    return None


def format_report(report: PairReport, *, verbose: bool = False) -> str:
    """Plain-text report: rows, a verdict line and, when timed, a time line."""
    lines = [f"{report.filename} ({report.device})"]
    if report.main_guard_line is not None:
        lines.append(
            f'note: the `if __name__ == "__main__":` block (line {report.main_guard_line}) did not run (verify runs the '
            f"file as `{SNIPPET_MODULE}` and calls `step()` if it defines one): what only that block computes is not compared"
        )
    if report.rewrite_raised:
        lines.append(
            f"MISMATCH: the rewrite raised {report.rewrite_exception} where the original ran ({report.rewrite_where})"
        )
        return "\n".join(lines)
    if report.error is not None:
        lines.append(f"ERROR: {report.error}")
        return "\n".join(lines)
    if report.compute_dtype is not None:
        rtol, atol = effective_tolerance(torch.float32, report.compute_dtype)
        name = str(report.compute_dtype).replace("torch.", "")
        lines.append(
            f"tolerance: {name} (rtol {rtol:g}, atol {atol:g}) for float32 values and Python floats, "
            f"the dtype autocast computes in ({report.compute_source})"
        )
    bad = [r for r in report.rows if not r.ok]
    explained = [r for r in report.rows if r.explained]
    lines.extend(_row_line(r) for r in (report.rows if verbose else bad + explained))
    exact = [r for r in report.rows if not r.explained]
    max_abs, max_rel = _worst(exact, "max_abs"), _worst(exact, "max_rel")
    unverified = report.unrun and not report.may_compile
    if report.unrun:
        what = (
            f"the rewrite's {_lines_text(report.unrun)} never ran in the compared run (under a `__main__` "
            "block verify does not run, in a function nothing calls, or on a branch not taken)"
        )
        if not unverified:
            lines.append(f"note: {what}, or ran compiled (the file mentions `compile`), which verify cannot see")
    if not bad and unverified:
        lines.append(
            f"NOT VERIFIED: {what}: the comparison does not cover them; call them from module-level code "
            "or define `step()` to run them"
        )
    elif not bad:
        tail = ""
        if explained:
            n = len(explained)
            tail = (
                f"; {n} parameter value{'s' if n != 1 else ''} differ{'' if n != 1 else 's'} only after "
                f"optimizer steps whose gradients agree (see the notes)"
            )
        lines.append(
            f"OK: {_count(report.rows)} match (max abs {_num(max_abs)}, max rel {_num(max_rel)}){tail}"
        )
    else:
        # A missing or incomparable entry (no error figure) ranks worst, NaN next.
        worst = max(
            bad,
            key=lambda r: (
                r.max_abs is None,
                math.inf if r.max_abs is None or math.isnan(r.max_abs) else r.max_abs,
            ),
        )
        lines.append(
            f"MISMATCH: {len(bad)} of {len(report.rows)} differ "
            f"(worst {worst.key}: max abs {_num(worst.max_abs)}, max rel {_num(worst.max_rel)}"
            + (f", {worst.note}" if worst.note else "")
            + ")"
        )
    if report.timing_error is not None:
        lines.append(f"time: not measured: {report.timing_error}")
    elif report.orig_ms is not None and report.new_ms is not None:
        lines.append(_time_line(report))
    return "\n".join(lines)


def _iqr(spread: Optional[Spread], fmt: str) -> str:
    if spread is None or spread.n < 2:
        return ""
    return f" (IQR {spread.q1:{fmt}}-{spread.q3:{fmt}})"


def _threads_text(report: PairReport) -> str:
    def n(k: Optional[int]) -> str:
        return f"{k} CPU thread{'s' if k != 1 else ''}"

    orig = report.orig_threads if report.orig_threads is not None else report.threads
    new = report.new_threads if report.new_threads is not None else report.threads
    if orig != new:
        return f"CPU threads: original {orig}, rewritten {new} (set by the snippets)"
    if report.threads is not None and orig != report.threads:
        return f"{n(orig)} (set by the snippet, not {report.threads})"
    return n(orig)


def _time_line(report: PairReport) -> str:
    """``time: original A ms (IQR ..), rewritten B ms (IQR ..), speedup Sx (IQR ..) (how)``."""
    assert report.orig_ms is not None and report.new_ms is not None
    speed = "n/a"
    if report.speedup is not None:
        speed = f"{report.speedup:.2f}x"
        spread = report.speedup_spread
        if spread is not None and spread.n >= 2:
            noise = ": no clear difference" if spread.contains(1.0) else ""
            speed += f" (IQR {spread.q1:.2f}-{spread.q3:.2f}{noise})"
    what = "" if report.timed_step else ", whole module re-executed: no step()"
    calls = "call" if report.repeat == 1 else "calls"
    return (
        f"time: original {report.orig_ms:.2f} ms{_iqr(report.orig_spread, '.2f')}, "
        f"rewritten {report.new_ms:.2f} ms{_iqr(report.new_spread, '.2f')}, speedup {speed} "
        f"(median of {report.repeat} {calls} each, order alternating, {_threads_text(report)}, "
        f"{report.device}{what})"
    )
