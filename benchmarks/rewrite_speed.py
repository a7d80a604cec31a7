"""Time every benchmark snippet before and after gradfix's rewrite (the default rules: GF001, GF003, GF004).

For each snippet in benchmarks/snippets and each size (small, large):

1. rewrite it with the engine, as ``gradfix fix`` does
   (``lint_bytes(data, path, LintOptions(codes, fix=True)).fixed``); every snippet must get
   a safe fix;
2. run original and rewrite once with the same seed and compare every
   parameter's and leaf's gradient with ``gradfix.harness.verify_pair``
   (``repeat=0``: no timing there); report the largest absolute and relative
   gradient error;
3. time ``step()`` of both, interleaved in one process: warm-up, then the
   median of at least ``--repeat`` calls each (more for fast steps, so that
   each side is timed for about half a second), with a fixed thread count;
4. measure the peak memory one step allocates on each side (method printed
   with the table; see benchmarks/_bench.py), and what autograd saves for
   backward during the step.

Prints a Markdown table; ``--json PATH`` also writes the rows.

    python benchmarks/rewrite_speed.py [--device cpu|cuda] [--repeat N] [--threads K]
                                       [--json out.json] [--only NAME] [--sizes small,large]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import List, Optional

import _bench  # noqa: I001  (sets sys.path and the kineto log level before torch loads)
import torch

from gradfix.engine import lint_bytes
from gradfix.harness import verify_pair
from gradfix.options import LintOptions
from gradfix.rules import select


MIN_SECONDS = 0.5


@dataclass
class Result:
    case: str
    size: str
    device: str
    original_ms: Optional[float] = None
    rewritten_ms: Optional[float] = None
    speedup: Optional[float] = None  # ratio of the medians
    speedup_min: Optional[float] = None  # ratio of the fastest calls (robust to a busy machine)
    original_min_ms: Optional[float] = None
    rewritten_min_ms: Optional[float] = None
    original_peak_mib: Optional[float] = None
    rewritten_peak_mib: Optional[float] = None
    original_saved_mib: Optional[float] = None
    rewritten_saved_mib: Optional[float] = None
    max_grad_abs_err: Optional[float] = None
    max_grad_rel_err: Optional[float] = None
    grads_ok: Optional[bool] = None
    original_spread_ms: Optional[List[float]] = None  # [p25, p75]
    rewritten_spread_ms: Optional[List[float]] = None
    repeat: int = 0  # timed calls per side
    error: Optional[str] = None


def rewrite(path: Path) -> str:
    data = path.read_bytes()
    result = lint_bytes(data, str(path), LintOptions(tuple(r.CODE for r in select()), fix=True))
    if result.error:
        raise RuntimeError(f"{path.name}: {result.error}")
    if result.fixed is None or result.remaining:
        left = "; ".join(f.message for f in result.remaining) if result.remaining else "no finding"
        raise RuntimeError(f"{path.name}: no complete safe rewrite ({left})")
    return result.fixed.decode("utf-8")


def quartiles(values: List[float]) -> List[float]:
    q = sorted(values)
    return [q[len(q) // 4], q[(3 * len(q)) // 4]]


def run_case(path: Path, size: str, device: str, repeat: int, warmup: int) -> Result:
    res = Result(case=path.stem, size=size, device=device)
    original = path.read_text(encoding="utf-8")
    try:
        rewritten = rewrite(path)
    except RuntimeError as e:
        res.error = str(e)
        return res
    with _bench.size_env(size):
        report = verify_pair(original, rewritten, filename=str(path), device=device, repeat=0)
        if report.error:
            res.error = report.error
            return res
        grads = [r for r in report.rows if r.what == "grad" and r.max_abs is not None]
        res.max_grad_abs_err = max((r.max_abs for r in grads), default=0.0)
        res.max_grad_rel_err = max((r.max_rel for r in grads), default=0.0)
        res.grads_ok = report.ok
        ns_orig = _bench.load(original, str(path), device)
        ns_new = _bench.load(rewritten, str(path), device)
    steps = [ns_orig["step"], ns_new["step"]]
    # Sub-millisecond steps need many more samples than the --repeat minimum
    # for a stable median: time at least MIN_SECONDS per side.
    with _bench.default_device(device):
        for s in steps:  # the first call pays for lazy state (optimizer moments)
            s()
        probe = max(_bench.time_call(s, device) for s in steps) / 1e3
    res.repeat = max(repeat, min(100 * repeat, int(MIN_SECONDS / max(probe, 1e-6))))
    t_orig, t_new = _bench.interleaved(steps, device, res.repeat, warmup)
    res.original_ms = _bench.median(t_orig)
    res.rewritten_ms = _bench.median(t_new)
    res.speedup = res.original_ms / res.rewritten_ms
    res.original_min_ms, res.rewritten_min_ms = min(t_orig), min(t_new)
    res.speedup_min = res.original_min_ms / res.rewritten_min_ms
    res.original_spread_ms = quartiles(t_orig)
    res.rewritten_spread_ms = quartiles(t_new)
    res.original_peak_mib = _bench.peak_step_memory(steps[0], device)
    res.rewritten_peak_mib = _bench.peak_step_memory(steps[1], device)
    res.original_saved_mib = _bench.saved_for_backward_mib(steps[0], device)
    res.rewritten_saved_mib = _bench.saved_for_backward_mib(steps[1], device)
    del steps, ns_orig, ns_new
    gc.collect()
    return res


def fmt(x: Optional[float], spec: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return format(x, spec)


def table(results: List[Result]) -> str:
    headers = [
        "case", "size", "device", "original ms", "rewritten ms", "speedup", "speedup of fastest",
        "peak MiB original", "peak MiB rewritten", "saved MiB original", "saved MiB rewritten",
        "max grad err (abs / rel)",
    ]
    rows = []
    for r in results:
        if r.error:
            rows.append([r.case, r.size, r.device, "error", "", "", "", "", "", "", "", r.error.replace("|", "/")])
            continue
        err = f"{fmt(r.max_grad_abs_err, '.1e')} / {fmt(r.max_grad_rel_err, '.1e')}"
        if not r.grads_ok:
            err += " MISMATCH"
        rows.append([
            r.case, r.size, r.device, fmt(r.original_ms, ".3f"), fmt(r.rewritten_ms, ".3f"),
            fmt(r.speedup, ".2f") + "x", fmt(r.speedup_min, ".2f") + "x",
            fmt(r.original_peak_mib, ".2f"), fmt(r.rewritten_peak_mib, ".2f"),
            fmt(r.original_saved_mib, ".2f"), fmt(r.rewritten_saved_mib, ".2f"), err,
        ])
    return _bench.markdown_table(headers, rows)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu or cuda (cuda:N); default cpu")
    ap.add_argument("--repeat", type=int, default=30,
                    help="timed calls per side (median); at least this many, more for fast steps "
                         f"(about {MIN_SECONDS:g} s per side); default 30")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls per side first; default 3")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads; default 1")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--only", metavar="NAME", help="only snippets whose file name contains NAME")
    ap.add_argument("--sizes", default="small,large", help="comma-separated: small,large")
    args = ap.parse_args(argv)

    try:
        device = _bench.check_device(args.device)
    except _bench.NoCuda as e:
        print(e)
        return 0
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    bad = [s for s in sizes if s not in _bench.SIZES]
    if bad:
        ap.error(f"unknown size(s) {bad}; expected {list(_bench.SIZES)}")
    paths = _bench.snippet_paths(args.only)
    if not paths:
        ap.error(f"no snippet matches {args.only!r}")
    torch.set_num_threads(args.threads)
    env = _bench.environment(device, torch.get_num_threads())
    cuda = torch.device(device).type == "cuda"

    results: List[Result] = []
    for path in paths:
        for size in sizes:
            r = run_case(path, size, device, args.repeat, args.warmup)
            results.append(r)
            print(f"  {r.case}/{r.size}: " + (r.error or f"{r.speedup:.2f}x"), file=sys.stderr, flush=True)

    method = _bench.CUDA_MEMORY_METHOD if cuda else _bench.CPU_MEMORY_METHOD
    print(
        f"rewrite speed: {env.device_name}, torch {env.torch}, {env.threads} thread(s), "
        f"median of >= {args.repeat} interleaved step() calls per side (>= {MIN_SECONDS:g} s) "
        f"after {args.warmup} warm-up, {env.date}\n"
    )
    print(table(results))
    print("\nSpeedup: ratio of the medians; speedup of fastest: ratio of the fastest calls "
          "(noise on a shared machine only adds time, so a large gap between the two means a busy machine).")
    print(f"Peak memory: {method}.")
    print("Saved MiB: distinct storages saved for backward during one step "
          "(torch.autograd.graph.saved_tensors_hooks), upstream included.")
    print("Gradient error: largest over every parameter's and leaf's .grad "
          "(gradfix.harness.verify_pair, same seed, one step).")
    if args.json:
        payload = {
            "environment": asdict(env),
            "memory_method": method,
            "repeat": args.repeat,
            "warmup": args.warmup,
            "results": [asdict(r) for r in results],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 1 if any(r.error or not r.grads_ok for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
