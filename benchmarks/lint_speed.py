"""Lint speed on real trees: `gradfix check` (default rules and `--select ALL`) against
`ruff check --select E,F --no-cache` and TorchFix.

Every tool runs cold, as a fresh subprocess on the same tree, one after the
other (after one untimed read of the whole tree, so every tool finds the files
in the page cache, and one untimed run of each tool, which writes gradfix's
bytecode as installing it would): gradfix with `--no-cache` where it has the option and a
fresh, empty `GRADFIX_CACHE_DIR` either way; ruff with `--no-cache`; TorchFix
has no cache. The table gives wall time, files per second (the `.py`/`.pyi`
files of the tree, what each tool is asked to check) and each tool's time as
a multiple of gradfix's with the default selection: the `gradfix --select ALL` row is the cost
of the opt-in rules (GF002), the ruff and TorchFix rows the comparison with the field.

    python benchmarks/lint_speed.py                        # torch + every other default tree found
    python benchmarks/lint_speed.py --tree stdlib=/usr/lib/python3.11 --tools gradfix,ruff
    python benchmarks/lint_speed.py --profile torch        # where gradfix's time goes, in process

Default trees: the installed `torch` package's sources, `sympy` (installed
with torch) and `transformers` when importable or unpacked under
`$GRADFIX_BENCH_TREES` (see `--help`). Tools are found next to this Python
(`ruff`), or named by `--ruff` / `--torchfix` / `$GRADFIX_BENCH_TORCHFIX`
(TorchFix pins an old libcst, so it usually lives in a virtual environment of
its own: `python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install torchfix`).
A tool that is not found is left out of the table with a note; one that runs
past `--timeout` seconds is stopped and shown as `> timeout`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = (".py", ".pyi")
# Directories every tool skips when walking (ruff's defaults, gradfix's too).
SKIPPED_DIRS = {
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
    ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
    "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
    "__pycache__", ".gradfix_cache",
}
TOOLS = ("gradfix", "gradfix-all", "ruff", "torchfix")


@dataclass
class Timing:
    tree: str
    files: int
    tool: str
    seconds: Optional[float]  # None: not run
    returncode: Optional[int] = None
    timed_out: bool = False
    note: str = ""
    key: str = ""  # the tool's key in TOOLS (`tool` is its label in the table)


# --------------------------------------------------------------------------- trees


def package_dir(name: str) -> Optional[Path]:
    """Where an installed package's sources are, without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def default_trees() -> List[Tuple[str, Path]]:
    trees: List[Tuple[str, Path]] = []
    for name in ("torch", "sympy", "transformers"):
        found = package_dir(name)
        if found is None and os.environ.get("GRADFIX_BENCH_TREES"):
            candidate = Path(os.environ["GRADFIX_BENCH_TREES"]) / name
            found = candidate if candidate.is_dir() else None
        if found is not None:
            trees.append((name, found))
    return trees


def python_files(tree: Path) -> List[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        out.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(SUFFIXES))
    return out


def warm(files: Sequence[Path]) -> None:
    for path in files:
        try:
            path.read_bytes()
        except OSError:
            pass


# --------------------------------------------------------------------------- tools


def gradfix_command(base: Sequence[str]) -> List[str]:
    """`gradfix check`, with `--no-cache` where this gradfix has it."""
    help_text = subprocess.run([*base, "check", "--help"], capture_output=True, text=True).stdout
    return [*base, "check", "--exit-zero", *(["--no-cache"] if "--no-cache" in help_text else [])]


def find_tool(explicit: Optional[str], name: str, env: Optional[str] = None) -> Optional[str]:
    for candidate in (explicit, os.environ.get(env) if env else None):
        if candidate:
            return candidate
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return shutil.which(name)


def time_command(command: Sequence[str], tree: Path, timeout: float, env: Dict[str, str]) -> Tuple[Optional[float], Optional[int], bool, str]:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [*command, str(tree)], cwd=tempfile.gettempdir(), env=env, timeout=timeout,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
    except subprocess.TimeoutExpired:
        return None, None, True, ""
    elapsed = time.perf_counter() - start
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()
    crashed = any(line.startswith("Traceback") for line in tail)
    return elapsed, done.returncode, False, ("crashed (traceback on stderr)" if crashed else "")


# --------------------------------------------------------------------------- table


def _fmt_seconds(t: Timing, timeout: float) -> str:
    if t.timed_out:
        return f"> {timeout:.0f}"
    return "-" if t.seconds is None else f"{t.seconds:.2f}"


def markdown(timings: Sequence[Timing], timeout: float) -> str:
    lines = [
        "| tree | files | tool | wall s | files/s | x gradfix | exit | note |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    # The reference is gradfix with its default selection (whatever its label).
    base = {t.tree: t.seconds for t in timings if t.key == "gradfix" and t.seconds}
    for t in timings:
        rate = "-"
        if t.seconds:
            rate = f"{t.files / t.seconds:,.0f}"
        elif t.timed_out:
            rate = f"< {t.files / timeout:,.0f}"
        ratio = "-"
        ref = base.get(t.tree)
        if ref and t.seconds:
            ratio = f"{t.seconds / ref:.2f}"
        elif ref and t.timed_out:
            ratio = f"> {timeout / ref:.0f}"
        exit_code = "-" if t.returncode is None else str(t.returncode)
        lines.append(
            f"| {t.tree} | {t.files} | {t.tool} | {_fmt_seconds(t, timeout)} | {rate} | {ratio} | {exit_code} | {t.note} |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- profile


def profile(tree: Path, limit: int = 15) -> str:
    """Where `gradfix check`'s time goes on one tree, in this process (default rules, no cache).

    Counts the files each prefilter stage keeps, then times CPython's parse,
    libcst's parse, metadata resolution and the rules' visitors for every
    file that passes the byte-level REQUIRED_TOKENS stage (what used to be
    parsed), so the table shows what the stronger stages save.
    """
    sys.path.insert(0, str(ROOT))
    import ast
    import warnings

    from gradfix import engine
    from gradfix.rules import select

    rules = select(None)
    out = []
    t0 = time.perf_counter()
    files = python_files(tree)
    datas = []
    for path in files:
        try:
            datas.append((path, path.read_bytes()))
        except OSError:
            pass
    t_read = time.perf_counter() - t0
    t0 = time.perf_counter()
    # An entry of REQUIRED_TOKENS may be a cheap test of the text (a function) instead of a token.
    tokens = [(p, d) for p, d in datas if any(all(tok(d) if callable(tok) else tok in d for tok in r.REQUIRED_TOKENS) for r in rules)]
    t_tokens = time.perf_counter() - t0
    t0 = time.perf_counter()
    kept = [(p, d) for p, d in datas if engine.prefilter(d, rules)]
    t_prefilter = time.perf_counter() - t0
    out.append(f"tree {tree}: {len(files)} files, read {t_read:.2f} s")
    out.append(f"rules: {', '.join(r.CODE for r in rules)}")
    out.append(f"plain REQUIRED_TOKENS substring test: {len(tokens)} files pass ({t_tokens:.3f} s)")
    out.append(f"engine.prefilter (all stages): {len(kept)} files pass ({t_prefilter:.3f} s)")
    out.append("")
    out.append("| file | KiB | ast s | libcst s | metadata s | rules s (approx.) | prefilter keeps |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    totals = [0.0, 0.0, 0.0, 0.0]
    rows = []
    for path, data in tokens:
        rel = str(path.relative_to(tree))
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(data)
        except Exception as exc:  # noqa: BLE001 - a profile, not a linter
            rows.append((0.0, f"| {rel} | {len(data) // 1024} | error: {type(exc).__name__} | | | | |"))
            continue
        t1 = time.perf_counter()
        import libcst as cst
        from libcst.metadata import MetadataWrapper

        from gradfix.rules import visitor

        t2 = t3 = None
        try:
            module = cst.parse_module(data)
            t2 = time.perf_counter()
            providers = set()
            for rule in rules:
                providers |= set(visitor(rule).get_inherited_dependencies())
            MetadataWrapper(module).resolve_many(providers)  # metadata alone, on a fresh copy
            t3 = time.perf_counter()
            engine._run(module, str(path), rules)  # metadata again, then the rules: rules = this - metadata
            t4 = time.perf_counter() - (t3 - t2)
            note = ""
        except Exception as exc:  # noqa: BLE001
            now = time.perf_counter()
            t2 = now if t2 is None else t2
            t3 = now if t3 is None else t3
            t4 = now - (t3 - t2) if t3 != now else now
            note = f" (crash: {type(exc).__name__}: {str(exc)[:60]})"
        parts = [t1 - t0, t2 - t1, t3 - t2, t4 - t3]
        totals = [a + b for a, b in zip(totals, parts)]
        keeps = "yes" if engine.prefilter(data, rules) else "no"
        rows.append((sum(parts), f"| {rel}{note} | {len(data) // 1024} | " + " | ".join(f"{x:.2f}" for x in parts) + f" | {keeps} |"))
    rows.sort(key=lambda r: -r[0])
    out.extend(r for _, r in rows[:limit])
    if len(rows) > limit:
        out.append(f"| ({len(rows) - limit} more) | | | | | | |")
    out.append("| **total** | | " + " | ".join(f"**{x:.2f}**" for x in totals) + " | |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- main


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                        help="a tree to lint (repeatable; default: torch, sympy, transformers where found)")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {','.join(TOOLS)}")
    parser.add_argument("--gradfix", default=None, metavar="CMD",
                        help="command prefix for gradfix (default: this Python -m gradfix)")
    parser.add_argument("--label", default="gradfix", help="the name gradfix's rows get (e.g. 'gradfix (before)')")
    parser.add_argument("--ruff", default=None, metavar="PATH")
    parser.add_argument("--torchfix", default=None, metavar="PATH", help="also $GRADFIX_BENCH_TORCHFIX")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per tool and tree (default 600)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of gradfix and ruff per tree, the median is shown (TorchFix runs once; default 3)")
    parser.add_argument("--profile", metavar="NAME", help="profile gradfix in process on this tree instead")
    args = parser.parse_args(argv)

    trees = [(spec.split("=", 1)[0], Path(spec.split("=", 1)[1]).resolve()) for spec in args.tree] or default_trees()
    if not trees:
        parser.error("no tree found: name one with --tree NAME=PATH")
    if args.profile:
        chosen = dict(trees).get(args.profile)
        if chosen is None:
            parser.error(f"--profile {args.profile}: no such tree ({', '.join(n for n, _ in trees)})")
        sys.stdout.write(profile(chosen))
        return 0

    wanted = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = set(wanted) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools: {', '.join(sorted(unknown))}")
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(ROOT))
    # An installed gradfix has its bytecode compiled (pip compiles at install): the untimed first
    # run of each tool below writes it, which PYTHONDONTWRITEBYTECODE would forbid, so that no
    # timed run (nor each of its worker processes) spends its start compiling gradfix's sources.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    commands: Dict[str, Optional[List[str]]] = {}
    notes: Dict[str, str] = {}
    if "gradfix" in wanted:
        base = shlex.split(args.gradfix) if args.gradfix else [sys.executable, "-m", "gradfix"]
        commands["gradfix"] = gradfix_command(base)
    if "gradfix-all" in wanted:
        base = shlex.split(args.gradfix) if args.gradfix else [sys.executable, "-m", "gradfix"]
        commands["gradfix-all"] = [*gradfix_command(base), "--select", "ALL"]
    if "ruff" in wanted:
        ruff = find_tool(args.ruff, "ruff")
        commands["ruff"] = [ruff, "check", "--select", "E,F", "--no-cache", "--exit-zero", "--quiet"] if ruff else None
        notes["ruff"] = "" if ruff else "not found (pip install ruff)"
    if "torchfix" in wanted:
        torchfix = find_tool(args.torchfix, "torchfix", "GRADFIX_BENCH_TORCHFIX")
        commands["torchfix"] = [torchfix] if torchfix else None
        notes["torchfix"] = "" if torchfix else "not found (--torchfix PATH)"

    timings: List[Timing] = []
    for name, tree in trees:
        files = python_files(tree)
        warm(files)
        for tool in wanted:
            command = commands.get(tool)
            label = {"gradfix": args.label, "gradfix-all": f"{args.label} --select ALL"}.get(tool, tool)
            if command is None:
                timings.append(Timing(name, len(files), label, None, note=notes.get(tool, ""), key=tool))
                continue
            runs = []
            if tool != "torchfix":  # (untimed: writes the bytecode, see above)
                with tempfile.TemporaryDirectory(prefix="gradfix-bench-cache-") as cache:
                    time_command(command, tree, args.timeout, dict(env, GRADFIX_CACHE_DIR=cache))
            for _ in range(1 if tool == "torchfix" else max(1, args.repeat)):
                with tempfile.TemporaryDirectory(prefix="gradfix-bench-cache-") as cache:
                    run_env = dict(env, GRADFIX_CACHE_DIR=cache)
                    runs.append(time_command(command, tree, args.timeout, run_env))
                if runs[-1][2]:
                    break  # timed out: once is enough
            runs.sort(key=lambda r: float("inf") if r[0] is None else r[0])
            seconds, code, timed_out, note = runs[len(runs) // 2]
            timings.append(Timing(name, len(files), label, seconds, code, timed_out, note, key=tool))
            print(f"# {name} ({tree}, {len(files)} files) {label}: "
                  f"{'timeout' if timed_out else f'{seconds:.2f} s'} exit {code}", file=sys.stderr, flush=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"{os.cpu_count()} cores, load average {load} at the end; cold runs (no tool cache, bytecode compiled "
          f"by an untimed first run), median of {args.repeat} for gradfix and ruff; x gradfix: relative to gradfix's default selection; Python {sys.version.split()[0]}\n")
    sys.stdout.write(markdown(timings, args.timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
