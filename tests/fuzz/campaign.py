"""A fuzz campaign that keeps going after a failure and groups the failures it finds.

    nice -n 10 .venv/bin/python -m tests.fuzz.campaign 3000 --out /tmp/fuzz-campaign

`pytest -m fuzz` stops at the first failure (and shrinks it); this runs N
examples, tallies the outcomes per catalogue part, and writes every failure to
OUT/failures.txt grouped by a signature (the rule selection, the first line of
what differed), with the smallest source of each group first, and the tally to
OUT/summary.txt. `--gradfix PATH` tests the gradfix package found under PATH
(for instance a `git archive HEAD` copy, so that edits in progress in the
checkout do not get in the way).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("examples", type=int)
    parser.add_argument("--out", default="fuzz-campaign")
    parser.add_argument("--gradfix", default=None, help="import gradfix from this directory")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--exclude", default="", help="catalogue parts not to draw: 'rule=GF001,callee=seq'")
    args = parser.parse_args(argv)
    if args.gradfix:
        sys.path.insert(0, os.path.abspath(args.gradfix))
        for name in [m for m in sys.modules if m == "gradfix" or m.startswith("gradfix.")]:
            del sys.modules[name]

    from hypothesis import HealthCheck, given, seed, settings

    import gradfix

    from .catalogue import steps
    from .check import explain, run

    tally: collections.Counter = collections.Counter()
    per_part: dict = collections.defaultdict(collections.Counter)
    groups: dict = collections.defaultdict(list)
    start = time.time()

    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(steps(exclude=frozenset(p for p in args.exclude.split(",") if p)))
    def campaign(step):
        outcome = run(step.source, step.codes)
        tally[outcome.kind] += 1
        for key, value in step.parts.items():
            per_part[f"{key}={value}"][outcome.kind] += 1
        if outcome.kind == "mismatch":
            first = (outcome.detail.splitlines() or [""])[0]
            signature = re.sub(r"0x[0-9a-f]+|\d+(\.\d+)?(e-?\d+)?", "N", first)[:140]
            groups[(step.parts["rule"], signature)].append(explain(step.source, step.codes, outcome, step.describe()))
        if sum(tally.values()) % 250 == 0:  # partial results while it runs
            dump(args.out, gradfix.__file__, tally, per_part, groups, time.time() - start)

    if args.seed is not None:
        campaign = seed(args.seed)(campaign)
    campaign()
    print("\n".join(dump(args.out, gradfix.__file__, tally, per_part, groups, time.time() - start)))
    return 0


def dump(out, where, tally, per_part, groups, elapsed):
    """Write OUT/summary.txt and OUT/failures.txt; return the summary's head."""
    os.makedirs(out, exist_ok=True)
    lines = [f"gradfix: {where}", f"{sum(tally.values())} examples in {elapsed:.0f} s: {dict(tally)}", ""]
    lines += [f"{len(v):5} {k[0]} {k[1]}" for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))]
    lines += [""] + [f"{k}: {dict(v)}" for k, v in sorted(per_part.items())]
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "failures.txt"), "w") as f:
        for (rule, signature), cases in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            f.write(f"##### {len(cases)} x {rule} {signature}\n\n")
            for case in sorted(cases, key=len)[:3]:
                f.write(case + "\n\n-----\n\n")
    return lines[: 2 + len(groups) + 1]


if __name__ == "__main__":
    sys.exit(main())
