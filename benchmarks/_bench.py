"""Shared helpers for the benchmark scripts (not part of gradfix or its tests).

Loading follows the snippet protocol of :mod:`gradfix.harness.runner`: a fresh
module namespace with ``__file__`` and ``DEVICE``, ``torch.manual_seed(seed)``,
float32 default dtype, grad mode on, the chosen device as torch's default
device (CUDA only: on CPU a default-device mode would add a per-call cost),
module-level code as setup and ``step()`` as the timed training step.

Timing interleaves the variants in one process (the order alternates every
round), after a warm-up, and takes the median; CUDA is synchronised around
each timed call.  Peak memory is the most the step allocates above what was
allocated when it started:

* CUDA: ``torch.cuda.reset_peak_memory_stats()`` before the step,
  ``torch.cuda.max_memory_allocated()`` after it, minus
  ``torch.cuda.memory_allocated()`` at the start (caching-allocator figures);
* CPU: torch has no CPU allocator statistics, so the step runs once under
  ``torch.profiler.profile(profile_memory=True)`` and the peak is the running
  maximum of the sum of the CPU ``[memory]`` events (every allocation and free
  of torch's CPU allocator, forward and backward, in time order; frees of
  memory allocated before the step, e.g. ``.grad`` dropped by ``zero_grad``,
  are not reported by the profiler, the same on both sides).  ``tracemalloc``
  would not see tensor memory at all.
"""

from __future__ import annotations

import contextlib
import gc
import os
import statistics
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence

# Kineto prints a line per profiler start/stop unless told otherwise.
os.environ.setdefault("KINETO_LOG_LEVEL", "5")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

SNIPPETS = Path(__file__).resolve().parent / "snippets"
SIZE_ENV = "GRADFIX_BENCH_SIZE"
SIZES = ("small", "large")
SNIPPET_MODULE = "__gradfix_snippet__"

CPU_MEMORY_METHOD = "torch.profiler profile_memory: peak of the running sum of CPU allocator events during one step"
CUDA_MEMORY_METHOD = "torch.cuda.max_memory_allocated() during one step, minus memory_allocated() at its start"


class NoCuda(RuntimeError):
    pass


def check_device(device: str) -> str:
    """``device`` if usable; raises :class:`NoCuda` with a message otherwise."""
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        built = "built without CUDA" if torch.version.cuda is None else f"built with CUDA {torch.version.cuda}"
        raise NoCuda(f"CUDA requested but not available (torch {torch.__version__}, {built}): skipping")
    return device


def device_name(device: str) -> str:
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    import platform

    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name or platform.processor() or platform.machine()} ({os.cpu_count()} logical CPUs)"


def snippet_paths(only: Optional[str] = None) -> List[Path]:
    paths = sorted(SNIPPETS.glob("*.py"))
    if only:
        paths = [p for p in paths if only in p.stem]
    return paths


@contextlib.contextmanager
def size_env(size: str) -> Iterator[None]:
    previous = os.environ.get(SIZE_ENV)
    os.environ[SIZE_ENV] = size
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(SIZE_ENV, None)
        else:
            os.environ[SIZE_ENV] = previous


@contextlib.contextmanager
def default_device(device: str) -> Iterator[None]:
    cuda = torch.device(device).type == "cuda"
    previous = torch.get_default_device()
    if cuda:
        torch.set_default_device(device)
    try:
        yield
    finally:
        if cuda:
            torch.set_default_device(previous if previous.type != "cpu" else None)


def sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def load(source: str, filename: str, device: str, seed: int = 0) -> Dict[str, object]:
    """Execute a snippet's module-level code (the setup); return its namespace."""
    torch.manual_seed(seed)
    if torch.device(device).type == "cuda":
        torch.cuda.manual_seed_all(seed)
    module = types.ModuleType(SNIPPET_MODULE)
    module.__dict__.update(__file__=filename, DEVICE=torch.device(device))
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    previous = sys.modules.get(SNIPPET_MODULE)
    sys.modules[SNIPPET_MODULE] = module
    try:
        with default_device(device):
            exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
    finally:
        if previous is None:
            sys.modules.pop(SNIPPET_MODULE, None)
        else:
            sys.modules[SNIPPET_MODULE] = previous
    if not callable(module.__dict__.get("step")):
        raise ValueError(f"{filename}: a benchmark snippet must define step()")
    return module.__dict__


def time_call(fn: Callable[[], object], device: str) -> float:
    """Wall time of one call in ms (CUDA synchronised before and after)."""
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return (time.perf_counter() - start) * 1e3


def interleaved(fns: Sequence[Callable[[], object]], device: str, repeat: int, warmup: int) -> List[List[float]]:
    """Per-call ms of each fn, called in alternating order each round."""
    with default_device(device):
        for _ in range(warmup):
            for fn in fns:
                fn()
        sync(device)
        gc.collect()
        times: List[List[float]] = [[] for _ in fns]
        order = list(range(len(fns)))
        for r in range(repeat):
            for i in order if r % 2 == 0 else order[::-1]:
                times[i].append(time_call(fns[i], device))
    return times


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def peak_step_memory(fn: Callable[[], object], device: str) -> float:
    """Peak MiB the step allocates above what was allocated at its start (see module doc)."""
    with default_device(device):
        gc.collect()
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            fn()
            torch.cuda.synchronize()
            return (torch.cuda.max_memory_allocated() - base) / 2**20
        from torch.profiler import ProfilerActivity, profile

        # No automatic garbage collection inside the step: it could free an
        # earlier snippet's tensors there and count their frees.
        gc.disable()
        try:
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                fn()
        finally:
            gc.enable()
        events = [
            e
            for e in prof.profiler.kineto_results.events()
            if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
        ]
        events.sort(key=lambda e: e.start_ns())
        current = peak = 0
        for e in events:
            current += e.nbytes()
            peak = max(peak, current)
        return peak / 2**20


def saved_for_backward_mib(fn: Callable[[], object], device: str) -> float:
    """MiB of distinct storages that autograd saves for backward during one step.

    Counted with ``torch.autograd.graph.saved_tensors_hooks`` (the pack hook
    records each saved tensor's storage once and returns the tensor itself,
    so nothing changes).  Includes what upstream layers save and leaves saved
    by reference (weights for their input gradients): the same on both sides,
    so the difference is what f's extra evaluation saves.
    """
    storages: Dict[tuple, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        key = (st.data_ptr(), str(t.device))
        storages[key] = max(storages.get(key, 0), st.nbytes())
        return t

    with default_device(device), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(storages.values()) / 2**20


@dataclass
class Env:
    torch: str
    device: str
    device_name: str
    threads: int
    date: str


def environment(device: str, threads: int) -> Env:
    return Env(
        torch=torch.__version__,
        device=device,
        device_name=device_name(device),
        threads=threads,
        date=time.strftime("%Y-%m-%d"),
    )


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 3) -> str:
    """A Markdown table; the first ``left`` columns left-aligned, the rest right-aligned."""
    aligns = ["---" if i < left else "---:" for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(aligns) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
