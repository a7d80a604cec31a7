"""Tests for gradfix.harness: running snippet pairs, comparing state, timing."""

from __future__ import annotations

import gc
import math
import re
import sys
import textwrap
import types

import pytest

torch = pytest.importorskip("torch")

from gradfix.harness import (  # noqa: E402
    DeviceUnavailable,
    PairReport,
    Row,
    SnippetError,
    compare_states,
    format_report,
    resolve_device,
    run_snippet,
    verify_pair,
)
from gradfix.harness.timing import DEFAULT_THREADS, Spread, abba, torch_threads  # noqa: E402


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# The DESIGN §2 seed: a generator G's output x is compared with a target y;
# the second pass flips the sign.  `reg` is a second use of x, which the
# textbook hook wrongly flips too.
SEED_ORIGINAL = src(
    """
    import torch

    G = torch.nn.Linear(8, 8)
    z = torch.randn(16, 8)
    y = torch.randn(16, 8, requires_grad=True)
    history = []

    def f(a, b):
        return ((a - b) ** 2).mean()

    def step():
        x = G(z)
        l1 = f(x.detach(), y)
        l2 = -f(x, y.detach())
        l1.backward()
        l2.backward(retain_graph=True)
        (x ** 2).mean().backward()
        history.append(l1.item())
    """
)

SEED_REWRITTEN = src(
    """
    import torch
    from gradfix.autograd import grad_scale

    G = torch.nn.Linear(8, 8)
    z = torch.randn(16, 8)
    y = torch.randn(16, 8, requires_grad=True)
    history = []

    def f(a, b):
        return ((a - b) ** 2).mean()

    def step():
        x = G(z)
        l = f(grad_scale(x, -1.0), y)
        l.backward(retain_graph=True)
        l1 = l.detach()
        (x ** 2).mean().backward()
        history.append(l1.item())
    """
)

SEED_TEXTBOOK_HOOK = SEED_REWRITTEN.replace(
    "l = f(grad_scale(x, -1.0), y)", "x.register_hook(lambda t: -t)\n    l = f(x, y)"
)


def rows_by_key(report_or_rows):
    rows = report_or_rows.rows if isinstance(report_or_rows, PairReport) else report_or_rows
    return {r.key: r for r in rows}


# ------------------------------------------------------------- comparisons


def test_equivalent_snippets_compare_ok():
    report = verify_pair(SEED_ORIGINAL, SEED_REWRITTEN, filename="seed.py", repeat=0)
    assert report.error is None
    assert report.ok, format_report(report, verbose=True)
    rows = rows_by_key(report)
    for key in ["G.weight", "G.weight.grad", "G.bias.grad", "z", "y", "y.grad", "history[0]"]:
        assert rows[key].ok
    assert rows["G.weight.grad"].what == "grad" and rows["G.weight.grad"].path == "G.weight"
    assert "history[1]" not in rows  # step() ran exactly once
    text = format_report(report)
    assert text.splitlines()[-1].startswith("OK: ")
    assert "tensors" in text and "max abs" in text and "time:" not in text


def test_textbook_hook_rewrite_is_a_mismatch_on_the_right_path():
    report = verify_pair(SEED_ORIGINAL, SEED_TEXTBOOK_HOOK, filename="seed.py", repeat=0)
    assert report.error is None and not report.ok
    rows = rows_by_key(report)
    assert not rows["G.weight.grad"].ok and not rows["G.bias.grad"].ok
    assert rows["G.weight.grad"].max_abs > 1e-3
    assert rows["y.grad"].ok and rows["G.weight"].ok  # values are untouched
    text = format_report(report)
    assert "MISMATCH G.weight.grad" in text
    assert text.splitlines()[-1].startswith("MISMATCH: ")
    assert "ok       y.grad" not in text  # mismatches only unless verbose
    assert "ok       y.grad" in format_report(report, verbose=True)


def test_different_coefficient_is_a_mismatch():
    original = "import torch\nw = torch.randn(4, requires_grad=True)\n(3 * w).sum().backward()\n"
    rewritten = original.replace("3 * w", "3.001 * w")
    report = verify_pair(original, rewritten, filename="coef.py", repeat=0)
    rows = rows_by_key(report)
    assert rows["w"].ok
    assert not rows["w.grad"].ok
    assert rows["w.grad"].max_abs == pytest.approx(1e-3, rel=1e-3)
    assert not report.ok


def test_none_versus_zero_grad_is_a_mismatch():
    original = "import torch\nw = torch.randn(3, requires_grad=True)\n(w * 0).sum().backward()\n"
    rewritten = "import torch\nw = torch.randn(3, requires_grad=True)\n"
    report = verify_pair(original, rewritten, filename="zero.py", repeat=0)
    row = rows_by_key(report)["w.grad"]
    assert not row.ok
    assert "None in rewritten" in row.note
    # and the other way round
    report = verify_pair(rewritten, original, filename="zero.py", repeat=0)
    row = rows_by_key(report)["w.grad"]
    assert not row.ok and "None in original" in row.note


def test_missing_key_in_rewritten_is_a_mismatch_and_extra_keys_are_ignored():
    original = "import torch\na = torch.ones(2)\nextra = torch.zeros(2)\n"
    rewritten = "import torch\na = torch.ones(2)\n_gf_tmp = torch.ones(5)\n"
    report = verify_pair(original, rewritten, filename="m.py", repeat=0)
    rows = rows_by_key(report)
    assert rows["a"].ok
    assert not rows["extra"].ok and "missing" in rows["extra"].note
    assert "_gf_tmp" not in rows
    assert "MISMATCH" in format_report(report)


TRAINER = src(
    """
    import torch
    from torch import nn

    class Trainer:
        def __init__(self):
            self.net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
            self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
            self.history = []
            self.me = self  # a cycle must not loop

        def train_step(self, data):
            self.opt.zero_grad()
            loss = self.net(data).pow(2).mean()
            loss.backward()
            self.opt.step()
            self.history.append(loss.item())

    trainer = Trainer()
    data = torch.randn(8, 3)
    log = {"loss": [], "steps": 0}
    aux = torch.randn(2, requires_grad=True)
    mid = aux * 2
    mid.retain_grad()
    mid.sum().backward()
    shape = data.shape

    def step():
        for _ in range(2):
            trainer.train_step(data)
            log["loss"].append(trainer.history[-1])
            log["steps"] += 1
    """
)


def test_trainer_attributes_logged_lists_and_buffers_are_collected():
    state = run_snippet(TRAINER, filename="trainer.py")
    for key in [
        "trainer.net.0.weight",
        "trainer.net.0.weight.grad",
        "trainer.net.1.running_mean",
        "trainer.net.1.num_batches_tracked",
        "trainer.history[0]",
        "trainer.history[1]",
        "log['loss'][1]",
        "log['steps']",
        "aux.grad",
        "mid",
        "mid.grad",
        "shape[0]",
    ]:
        assert key in state, key
    assert state["log['steps']"] == 2
    assert state["trainer.net.1.num_batches_tracked"].item() == 2
    assert "trainer.net.1.running_mean.grad" not in state  # buffers: value only
    assert not any("opt" in k or "DEVICE" in k or "__" in k for k in state)
    assert not any(k.startswith("trainer.me") for k in state)
    assert all(t.device.type == "cpu" for t in state.values() if isinstance(t, torch.Tensor))


def test_trainer_pair_with_changed_update_shows_which_parameters_differ():
    rewritten = TRAINER.replace("lr=0.1", "lr=0.2")
    report = verify_pair(TRAINER, rewritten, filename="trainer.py", repeat=0)
    rows = rows_by_key(report)
    assert not rows["trainer.net.0.weight"].ok
    assert not rows["trainer.history[1]"].ok and rows["trainer.history[1]"].kind == "number"
    assert rows["trainer.history[0]"].ok  # the first loss is computed before any update
    assert rows["aux.grad"].ok


def test_compare_states_tolerances_by_dtype():
    base64 = torch.tensor([1.0, 2.0, math.inf, math.nan], dtype=torch.float64)
    rows = compare_states(
        {"a": base64, "b": base64, "c": torch.tensor([1.0]), "d": torch.tensor([1.0]),
         "h": torch.tensor([1.0], dtype=torch.bfloat16), "i": torch.tensor([3]),
         "f": 0.5, "n": 3, "flag": True},
        {"a": base64 * (1 + 1e-12), "b": base64 * (1 + 1e-8), "c": torch.tensor([1.0 + 5e-6]),
         "d": torch.tensor([1.0 + 1e-4]), "h": torch.tensor([1.0078125], dtype=torch.bfloat16),
         "i": torch.tensor([4]), "f": 0.5 + 1e-7, "n": 3, "flag": False},
    )
    ok = {r.key: r.ok for r in rows}
    assert ok == {"a": True, "b": False, "c": True, "d": False, "h": True, "i": False,
                  "f": True, "n": True, "flag": False}
    by_key = {r.key: r for r in rows}
    assert by_key["a"].max_rel < 1e-11  # inf == inf and NaN pairs count as zero error
    assert by_key["i"].max_abs == 1.0
    assert all(r.kind == "number" for r in rows if r.key in ("f", "n", "flag"))


def test_compare_states_shape_dtype_nan_and_type_mismatches():
    rows = rows_by_key(compare_states(
        {"s": torch.zeros(2), "d": torch.zeros(2), "nan": torch.tensor([math.nan, 1.0]),
         "t": torch.zeros(1), "inf": torch.tensor([math.inf])},
        {"s": torch.zeros(3), "d": torch.zeros(2, dtype=torch.float64),
         "nan": torch.tensor([1.0, 1.0]), "t": 0.0, "inf": torch.tensor([1.0])},
    ))
    assert "shape" in rows["s"].note and "dtype" in rows["d"].note
    assert "NaN positions" in rows["nan"].note
    assert "tensor in original" in rows["t"].note
    assert rows["inf"].max_abs == math.inf and rows["inf"].max_rel == math.inf
    assert not any(r.ok for r in rows.values())


def test_row_fields():
    row = Row("net.0.weight", "grad", 1e-7, 2e-7, True)
    assert row.key == "net.0.weight.grad" and row.note == ""


# ------------------------------------------------------------------- errors


def test_exception_in_rewritten_is_captured_with_side_and_line():
    rewritten = SEED_REWRITTEN.replace("l1 = l.detach()", "l1 = l.detach()\n    raise ValueError('boom')")
    line = rewritten.splitlines().index("    raise ValueError('boom')") + 1
    report = verify_pair(SEED_ORIGINAL, rewritten, filename="seed.py", repeat=5)
    assert not report.ok
    assert report.error_side == "rewritten" and report.error_line == line
    assert "ValueError: boom" in report.error and f"line {line}" in report.error
    assert "step" in report.error
    assert report.orig_ms is None  # nothing timed after a failure
    # The original ran: the rewrite raising is a mismatch, said in one line.
    assert report.rewrite_raised and report.rewrite_exception == "ValueError: boom"
    assert format_report(report).splitlines()[-1].startswith("MISMATCH: the rewrite raised ValueError: boom where the original ran")


def test_exception_in_original_setup_and_syntax_error():
    original = "import torch\nx = torch.ones(2)\ny = x[5]\n"
    report = verify_pair(original, original, filename="o.py", repeat=0)
    assert report.error_side == "original" and report.error_line == 3
    assert "IndexError" in report.error and "setup" in report.error
    assert not report.rewrite_raised and format_report(report).splitlines()[-1].startswith("ERROR: original")

    report = verify_pair("x = 1\n", "x = (\n", filename="s.py", repeat=0)
    assert report.error_side == "rewritten" and "SyntaxError" in report.error and report.rewrite_raised


def test_exception_inside_torch_points_at_the_snippet_line():
    bad = "import torch\nw = torch.randn(2)\nw.sum().backward()\n"
    with pytest.raises(SnippetError) as info:
        run_snippet(bad, filename="b.py")
    err = info.value
    assert err.lineno == 3 and err.exc_type == "RuntimeError" and err.side is None
    assert err.line == "w.sum().backward()"


def test_sys_exit_in_snippet_is_captured():
    report = verify_pair("import sys\nsys.exit(3)\n", "x = 1\n", filename="e.py", repeat=0)
    assert report.error_side == "original" and "SystemExit" in report.error


def test_step_presence_must_agree_and_empty_state_is_an_error():
    report = verify_pair("x = 1\ndef step(): pass\n", "x = 1\n", filename="p.py", repeat=0)
    assert not report.ok and "defines step()" in report.error
    report = verify_pair("import torch\n", "import torch\n", filename="p.py", repeat=0)
    assert not report.ok and "nothing to compare" in report.error


# ------------------------------------------------------------------- timing


def test_timing_with_step():
    report = verify_pair(SEED_ORIGINAL, SEED_REWRITTEN, filename="seed.py", repeat=3)
    assert report.ok and report.timed_step
    assert report.orig_ms > 0 and report.new_ms > 0
    assert report.orig_spread.n == report.new_spread.n == report.speedup_spread.n == 3
    assert report.orig_ms == report.orig_spread.median and report.new_ms == report.new_spread.median
    # the speedup is the median of the per-round ratios, inside their IQR
    assert report.speedup == report.speedup_spread.median
    assert report.speedup_spread.q1 <= report.speedup <= report.speedup_spread.q3
    assert report.threads == report.orig_threads == report.new_threads == DEFAULT_THREADS == 1
    # timing's extra calls of step() do not leak into the compared state
    assert "history[1]" not in rows_by_key(report)
    last = format_report(report).splitlines()[-1]
    assert last.startswith("time: original ") and "speedup" in last
    assert re.fullmatch(
        r"time: original [0-9.]+ ms \(IQR [0-9.]+-[0-9.]+\), rewritten [0-9.]+ ms \(IQR [0-9.]+-[0-9.]+\), "
        r"speedup [0-9.]+x \(IQR [0-9.]+-[0-9.]+(: no clear difference)?\) "
        r"\(median of 3 calls each, order alternating, 1 CPU thread, cpu\)",
        last,
    ), last


def test_timing_without_step_reexecutes_the_module():
    snippet = "import torch\nw = torch.randn(3, requires_grad=True)\n(w * 2).sum().backward()\n"
    report = verify_pair(snippet, snippet, filename="m.py", repeat=2)
    assert report.ok and not report.timed_step
    assert report.orig_ms > 0 and report.new_ms > 0 and report.speedup > 0
    assert "whole module re-executed" in format_report(report)


def test_repeat_zero_skips_timing():
    report = verify_pair(SEED_ORIGINAL, SEED_REWRITTEN, filename="seed.py", repeat=0)
    assert report.orig_ms is None and report.new_ms is None and report.speedup is None


def test_step_that_cannot_rerun_reports_a_timing_error_but_keeps_the_verdict():
    snippet = src(
        """
        import torch
        w = torch.randn(3, requires_grad=True)
        loss = (w ** 2).sum()
        def step():
            loss.backward()
        """
    )
    report = verify_pair(snippet, snippet, filename="once.py", repeat=2)
    assert report.ok and report.timing_error is not None
    # both sides fail on their second call; with the order alternating, the
    # rewritten side makes its second call first (round 2 runs B, A)
    assert report.timing_error.startswith("rewritten timing failed: RuntimeError")
    assert "backward through the graph" in report.timing_error
    assert "time: not measured" in format_report(report)


# ---------------------------------------------------- timing: how it measures

PROBE = "_gradfix_timing_probe"


@pytest.fixture
def probe(monkeypatch):
    """A module the snippets import to record, from inside step(), what they saw."""
    module = types.ModuleType(PROBE)
    module.calls = []
    monkeypatch.setitem(sys.modules, PROBE, module)
    return module.calls


@pytest.fixture
def caller_threads():
    """Run the test with 2 torch threads in the caller (restored afterwards)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(previous)


def recording(tag: str, setup: str = "") -> str:
    """A snippet whose step() records (tag, torch's thread count, gc enabled?)."""
    return src(
        f"""
        import gc
        import torch
        import {PROBE}
        {setup}
        w = torch.randn(4, requires_grad=True)

        def step():
            {PROBE}.calls.append(({tag!r}, torch.get_num_threads(), gc.isenabled()))
            (w * 3).sum().backward()
        """
    )


@pytest.mark.parametrize("threads", [1, 3])
def test_thread_count_is_pinned_during_the_run_and_restored_after(probe, caller_threads, threads):
    report = verify_pair(recording("A"), recording("B"), filename="t.py", repeat=4, threads=threads)
    assert report.ok and report.timing_error is None
    assert probe, "step() was never called"
    # comparison and timing calls alike ran with the requested count
    assert {n for _, n, _ in probe} == {threads}
    assert torch.get_num_threads() == caller_threads
    assert report.threads == report.orig_threads == report.new_threads == threads
    plural = "" if threads == 1 else "s"
    assert f", {threads} CPU thread{plural}, cpu)" in format_report(report)


def test_threads_none_keeps_the_callers_count(probe, caller_threads):
    report = verify_pair(recording("A"), recording("B"), filename="t.py", repeat=2, threads=None)
    assert {n for _, n, _ in probe} == {caller_threads}
    assert report.threads == caller_threads and "2 CPU threads" in format_report(report)


def test_a_snippets_own_thread_count_is_used_reported_and_not_leaked(probe, caller_threads):
    own = recording("A", setup="torch.set_num_threads(3)")
    report = verify_pair(own, own, filename="t.py", repeat=2, threads=1)
    assert {n for _, n, _ in probe} == {3}
    assert report.threads == 1 and report.orig_threads == report.new_threads == 3
    assert "3 CPU threads (set by the snippet, not 1)" in format_report(report)
    assert torch.get_num_threads() == caller_threads
    # only one side sets it: the count differs between the sides, and says so
    report = verify_pair(recording("A"), own, filename="t.py", repeat=2, threads=1)
    assert (report.orig_threads, report.new_threads) == (1, 3)
    assert "CPU threads: original 1, rewritten 3" in format_report(report)
    # ... and within the timing, each side's steps ran with its own count
    timed = probe[-4:]
    assert sorted(timed) == [("A", 1, False), ("A", 1, False), ("A", 3, False), ("A", 3, False)]
    # run_snippet restores the count too
    run_snippet(own, filename="t.py")
    assert torch.get_num_threads() == caller_threads


def test_invalid_thread_count_is_refused(caller_threads):
    for bad in (0, -1):
        with pytest.raises(ValueError, match="threads must be at least 1"):
            verify_pair("x = 1\n", "x = 1\n", filename="t.py", threads=bad)
    assert torch.get_num_threads() == caller_threads


def test_timing_alternates_the_order_each_round_after_a_warmup(probe):
    repeat = 5
    report = verify_pair(recording("A"), recording("B"), filename="t.py", repeat=repeat)
    assert report.ok and report.timing_error is None
    tags = [tag for tag, _, _ in probe]
    # the comparison runs each side once, original first
    assert tags[:2] == ["A", "B"]
    rounds = [tuple(tags[i:i + 2]) for i in range(2, len(tags), 2)]
    assert report.warmup >= 2
    assert len(rounds) == report.warmup + repeat
    expected = [("A", "B"), ("B", "A")]
    warmup, timed = rounds[:report.warmup], rounds[report.warmup:]
    assert warmup == [expected[i % 2] for i in range(len(warmup))]
    assert timed == [expected[i % 2] for i in range(repeat)]  # A B, B A, A B, B A, A B


def test_garbage_collector_is_off_inside_timed_calls_only(probe):
    assert gc.isenabled()
    verify_pair(recording("A"), recording("B"), filename="t.py", repeat=3)
    enabled = [on for _, _, on in probe]
    assert enabled[:2] == [True, True]  # the compared step is not a timed call
    assert not any(enabled[2:])  # warm-up and timed calls
    assert gc.isenabled()


def test_timing_without_step_alternates_and_pins_threads_too(probe, caller_threads):
    def module(tag):
        return f"import torch\nimport {PROBE}\n{PROBE}.calls.append(({tag!r}, torch.get_num_threads(), None))\nv = 1.0\n"

    report = verify_pair(module("A"), module("B"), filename="m.py", repeat=4, threads=1)
    assert report.ok and not report.timed_step
    tags = [tag for tag, _, _ in probe]
    # two comparison runs, two loads for timing, then the rounds
    rounds = [tuple(tags[i:i + 2]) for i in range(4, len(tags), 2)]
    assert rounds[report.warmup:] == [("A", "B"), ("B", "A")] * 2
    assert {n for _, n, _ in probe} == {1}
    assert torch.get_num_threads() == caller_threads


def test_report_shows_the_spread_and_flags_a_difference_within_noise():
    report = PairReport(filename="f.py", device="cpu", rows=[], ok=True, timed_step=True, repeat=5, threads=1,
                        orig_threads=1, new_threads=1)
    report.orig_spread = Spread.of([10.0, 11.0, 12.0, 13.0, 14.0])
    report.new_spread = Spread.of([5.0, 5.5, 6.0, 6.5, 7.0])
    report.orig_ms, report.new_ms = report.orig_spread.median, report.new_spread.median
    report.speedup_spread = Spread.of([1.8, 1.9, 2.0, 2.1, 2.2])
    report.speedup = report.speedup_spread.median
    last = format_report(report).splitlines()[-1]
    assert last == (
        "time: original 12.00 ms (IQR 11.00-13.00), rewritten 6.00 ms (IQR 5.50-6.50), "
        "speedup 2.00x (IQR 1.90-2.10) (median of 5 calls each, order alternating, 1 CPU thread, cpu)"
    )
    report.speedup_spread = Spread.of([0.9, 0.96, 1.01, 1.04, 1.1])
    report.speedup = report.speedup_spread.median
    assert "speedup 1.01x (IQR 0.96-1.04: no clear difference)" in format_report(report)
    # a single call has no spread to show
    report.repeat = 1
    report.orig_spread, report.new_spread = Spread.of([11.0]), Spread.of([5.0])
    report.speedup_spread = Spread.of([2.2])
    report.orig_ms, report.new_ms, report.speedup = 11.0, 5.0, 2.2
    assert format_report(report).splitlines()[-1] == (
        "time: original 11.00 ms, rewritten 5.00 ms, speedup 2.20x "
        "(median of 1 call each, order alternating, 1 CPU thread, cpu)"
    )


def test_spread_and_abba_helpers():
    s = Spread.of([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median, s.q1, s.q3, s.min, s.max, s.n) == (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    assert s.contains(3.5) and not s.contains(4.0) and not s.contains(0.5)
    one = Spread.of([7.0])
    assert (one.median, one.q1, one.q3, one.n) == (7.0, 7.0, 7.0, 1)
    with pytest.raises(ValueError):
        Spread.of([])
    assert [abba(r) for r in range(4)] == [[0, 1], [1, 0], [0, 1], [1, 0]]


def test_torch_threads_restores_even_after_an_exception(caller_threads):
    with pytest.raises(RuntimeError):
        with torch_threads(1) as n:
            assert n == 1 and torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert torch.get_num_threads() == caller_threads
    with torch_threads(None) as n:
        assert n == caller_threads


# ------------------------------------------------------------ environment


def test_snippet_sees_protocol_namespace_and_globals_are_restored(capsys):
    snippet = src(
        """
        from __future__ import annotations
        import dataclasses
        import torch

        @dataclasses.dataclass
        class Box:
            value: float

        print("noise from the snippet")
        torch.set_default_dtype(torch.float64)
        assert __name__ == "__gradfix_snippet__" and __file__ == "env.py"
        assert DEVICE == torch.device("cpu")
        box = Box(1.5)
        r = torch.rand(2)

        def step():
            # the snippet's own default dtype still holds when step() runs
            global s
            s = torch.rand(2)
        """
    )
    before = (torch.get_default_device(), torch.get_default_dtype(), torch.is_grad_enabled())
    rng_before = torch.get_rng_state()
    state = run_snippet(snippet, filename="env.py", seed=123)
    after = (torch.get_default_device(), torch.get_default_dtype(), torch.is_grad_enabled())
    assert before == after
    assert torch.equal(torch.get_rng_state(), rng_before)  # the caller's RNG is untouched
    assert state["box.value"] == 1.5
    assert state["r"].dtype == torch.float64 and state["s"].dtype == torch.float64
    torch.manual_seed(123)
    assert torch.equal(state["r"], torch.rand(2, dtype=torch.float64))
    assert "noise" not in capsys.readouterr().out
    # same seed, same state
    again = run_snippet(snippet, filename="env.py", seed=123)
    assert torch.equal(again["s"], state["s"])


def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailable, match=r"CUDA was requested but torch.cuda.is_available\(\) is False"):
            resolve_device("cuda")
        with pytest.raises(DeviceUnavailable):
            verify_pair("x = 1\n", "x = 1\n", filename="c.py", device="cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_pair():
    assert resolve_device("cuda") == "cuda"
    probe = "import torch\nassert torch.randn(1).device.type == 'cuda' and DEVICE.type == 'cuda'\n"
    report = verify_pair(probe + SEED_ORIGINAL, probe + SEED_REWRITTEN, filename="seed.py",
                         device="cuda", repeat=3)
    assert report.error is None and report.ok, format_report(report, verbose=True)
    assert report.device == "cuda" and report.orig_ms > 0 and report.new_ms > 0
    assert format_report(report).endswith("(median of 3 calls each, order alternating, 1 CPU thread, cuda)")
    bad = verify_pair(SEED_ORIGINAL, SEED_TEXTBOOK_HOOK, filename="seed.py", device="cuda", repeat=0)
    assert not rows_by_key(bad)["G.weight.grad"].ok
    assert torch.get_default_device().type == "cpu"


MAIN_GUARDED = """\
import torch

w = torch.ones(3, requires_grad=True)
SCALE = 2.0


def loss_of(x):
    return (x * SCALE).sum()


if __name__ == "__main__":
    loss_of(w).backward()
"""


def test_a_main_guard_that_does_not_run_is_named_in_the_report():
    # Verify runs the file as `__gradfix_snippet__`: the guarded block (where a script backpropagates)
    # does not run, and an OK about module-level values alone must say so (review, stop 24: an OK on
    # a rewrite whose gradients differed, all of them computed under the guard).
    rewritten = MAIN_GUARDED.replace("x * SCALE", "x * SCALE * 3")
    report = verify_pair(MAIN_GUARDED, rewritten, filename="script.py", repeat=0)
    text = format_report(report)
    assert report.main_guard_line == 11
    assert 'note: the `if __name__ == "__main__":` block (line 11) did not run' in text
    assert [r.note for r in w_grad_rows(report)] == ["None in both"]  # nothing under the guard ran


def w_grad_rows(report):
    return [r for r in report.rows if r.path == "w" and r.what == "grad"]


def test_no_note_without_a_main_guard():
    source = MAIN_GUARDED.replace('if __name__ == "__main__":\n    loss_of(w).backward()\n', "loss_of(w).backward()\n")
    report = verify_pair(source, source, filename="script.py", repeat=0)
    assert report.main_guard_line is None
    assert "did not run" not in format_report(report)
    assert [r.note for r in w_grad_rows(report)] != ["None in both"]
