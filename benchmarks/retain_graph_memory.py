"""Peak memory of a training step before and after GF005's fix (dropping a needless `retain_graph=True`).

For each snippet in benchmarks/snippets_memory and each size:

1. rewrite it with the engine (``--select GF005``), which must give a safe fix, and check
   the gradients of original and rewrite agree (``gradfix.harness.verify_pair``);
2. measure, side by side in this process, the peak torch's CPU allocator reaches during one
   step above what was allocated at its start (``_bench.peak_step_memory``: the profiler's
   memory events; on CUDA the caching allocator's peak);
3. run each version for ``--steps`` steps in a fresh subprocess and report its peak resident
   set size (``ru_maxrss``), which also sees what the allocator keeps between steps.

Prints a Markdown table of both figures and their ratio.

    python benchmarks/retain_graph_memory.py [--device cpu|cuda] [--steps N] [--sizes small,large]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _bench  # noqa: I001  (sets sys.path and the kineto log level before torch loads)
import torch

from gradfix.engine import lint_bytes
from gradfix.harness import verify_pair
from gradfix.options import LintOptions

HERE = Path(__file__).resolve().parent
SNIPPETS = HERE / "snippets_memory"

# Run in a fresh interpreter: load the snippet, run `steps` steps, print the peak RSS in MiB.
_RSS_CHILD = r"""
import resource, sys
sys.path.insert(0, {bench!r})
import _bench
ns = _bench.load(open({path!r}).read(), {path!r}, {device!r})
for _ in range({steps}):
    ns["step"]()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def rss_mib(source: str, device: str, steps: int, size: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(source)
        path = handle.name
    try:
        env = {**os.environ, "GRADFIX_BENCH_SIZE": size, "OMP_NUM_THREADS": "1"}
        code = _RSS_CHILD.format(bench=str(HERE), path=path, device=device, steps=steps)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])
    finally:
        os.unlink(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--sizes", default="small,large")
    parser.add_argument("--json")
    args = parser.parse_args()
    device = _bench.check_device(args.device)
    torch.set_num_threads(1)
    rows, results = [], []
    for path in sorted(SNIPPETS.glob("*.py")):
        source = path.read_text()
        result = lint_bytes(source.encode(), str(path), LintOptions(("GF005",), fix=True))
        if result.fixed is None or not result.findings or not all(f.fixable for f in result.findings):
            print(f"{path.name}: no safe GF005 fix", file=sys.stderr)
            return 1
        fixed = result.fixed.decode()
        for size in args.sizes.split(","):
            with _bench.size_env(size):
                report = verify_pair(source, fixed, filename=str(path), device=device, repeat=0)
                if not report.ok:
                    print(f"{path.name} ({size}): rewrite does not match: {report.error}", file=sys.stderr)
                    return 1
                peaks = []
                for text in (source, fixed):
                    ns = _bench.load(text, str(path), device)
                    ns["step"]()  # warm-up: the optimizer's state and .grad exist from here on
                    peaks.append(_bench.peak_step_memory(ns["step"], device))
                    del ns
            rss = [rss_mib(text, device, args.steps, size) for text in (source, fixed)]
            row = {
                "case": path.stem, "size": size, "device": device,
                "original_peak_mib": round(peaks[0], 1), "rewritten_peak_mib": round(peaks[1], 1),
                "original_rss_mib": round(rss[0], 1), "rewritten_rss_mib": round(rss[1], 1),
            }
            results.append(row)
            rows.append([
                f"{path.stem} ({size})",
                f"{peaks[0]:.1f}", f"{peaks[1]:.1f}", f"{peaks[1] / peaks[0]:.2f}",
                f"{rss[0]:.0f}", f"{rss[1]:.0f}", f"{rss[1] / rss[0]:.2f}",
            ])
    print(_bench.markdown_table(
        ["case", "step peak MiB original", "rewritten", "ratio", f"RSS MiB ({args.steps} steps) original", "rewritten", "ratio"],
        rows, left=1,
    ))
    if args.json:
        Path(args.json).write_text(json.dumps({"environment": vars(_bench.environment(device, 1)), "rows": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
