"""Timing helpers for ``gradfix verify``: pinned threads, ABBA order, spreads.

What makes a wall-clock comparison of two training steps trustworthy on a
shared machine, and what this module does about it:

* **Threads.**  With several intra-op threads, one call's time depends on
  whether every thread got a core for the whole call; on a loaded 2-core
  machine that swings from call to call and the two versions do not see the
  same load.  :func:`torch_threads` pins torch's CPU thread count for the run
  and restores the previous count afterwards (``gradfix verify`` pins 1 by
  default, like ``benchmarks/``).
* **Order.**  Calling the original always first lets a trend (a machine
  getting busier, caches warmed by the call before, the allocator's state)
  fall on one side.  :func:`abba` alternates which side runs first each round
  (A B, B A, A B, ...), so a linear drift cancels between the two.
* **Garbage collection.**  A cyclic collection triggered inside a timed call
  bills one side for garbage the other may have left; :func:`timed_call`
  disables the collector during the call (as ``timeit`` does), so pending
  collections run between calls, outside the measurement.
* **Warm-up.**  The first calls pay one-off costs (lazy initialisation,
  allocator growth, first-touch page faults); :data:`WARMUP_ROUNDS` rounds at
  least, and more until :data:`WARMUP_SECONDS` have been spent, are run and
  discarded.
* **Spread.**  A median alone hides how noisy the numbers were.
  :class:`Spread` keeps the quartiles and extremes of the per-call times; the
  speedup's spread is taken over the per-round ratios (each round times both
  sides back to back, so the pairs share the machine's state).
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Sequence

import torch

__all__ = [
    "DEFAULT_THREADS",
    "WARMUP_MAX_ROUNDS",
    "WARMUP_ROUNDS",
    "WARMUP_SECONDS",
    "Spread",
    "abba",
    "timed_call",
    "torch_threads",
]

# One thread, as benchmarks/ use: the number then measures the work each
# version does, which is what a rewrite changes, not how well torch's thread
# pool competed with other jobs for the cores (on a shared 2-core machine the
# default, one thread per core, made speedups swing far from the truth).
# `gradfix verify --threads N` measures at another setting.
DEFAULT_THREADS = 1

WARMUP_ROUNDS = 2  # at least this many untimed rounds (each calls both sides)
WARMUP_SECONDS = 0.2  # ... and more until this much time went into them
WARMUP_MAX_ROUNDS = 50  # ... but never more than this many


@contextlib.contextmanager
def torch_threads(threads: Optional[int]) -> Iterator[int]:
    """Set torch's intra-op CPU thread count for the block; restore it after.

    ``None`` leaves the count as it is.  Yields the count in effect.
    """
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    previous = torch.get_num_threads()
    if threads is not None and threads != previous:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)


def abba(round_index: int, sides: int = 2) -> List[int]:
    """The order in which the sides run in round ``round_index``: 0 1, 1 0, 0 1, ..."""
    order = list(range(sides))
    return order if round_index % 2 == 0 else order[::-1]


def timed_call(fn: Callable[[], object], cuda: bool) -> float:
    """Wall time of ``fn()`` in ms, with the cyclic GC off and CUDA synchronised around it."""
    if cuda:
        torch.cuda.synchronize()
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class Spread:
    """Median, quartiles and extremes of some measurements (quartiles: inclusive method)."""

    median: float
    q1: float
    q3: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        values = list(values)
        if not values:
            raise ValueError("no values")
        if len(values) == 1:
            q1 = q3 = values[0]
        else:
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
        return cls(statistics.median(values), q1, q3, min(values), max(values), len(values))

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies strictly inside the interquartile range."""
        return self.q1 < value < self.q3
