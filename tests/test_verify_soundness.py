"""`gradfix verify` says MISMATCH exactly when the rewrite behaves differently.

* A rewrite that raises where the original ran is a mismatch (exit 1, one line
  naming the exception); an original that raises is a bad snippet (exit 2).
* No false alarms from rounding the rewrite does not cause: under 16-bit
  `torch.autocast` the tolerance is the compute dtype's; a parameter whose
  gradients agreed at every optimizer step but whose value differs after the
  step (Adam turns 1e-12 against 0 into about ±lr) is OK with a note.
* Both directions are tested: a real gradient difference stays a mismatch,
  also under autocast, also when `zero_grad()` after the step leaves no
  gradient to compare.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from gradfix.cli import main  # noqa: E402
from gradfix.harness import format_report, verify_pair  # noqa: E402
from gradfix.harness.compare import autocast_dtype  # noqa: E402


def verify(original: str, rewritten: str, **kwargs):
    return verify_pair(textwrap.dedent(original), textwrap.dedent(rewritten), filename="s.py", device="cpu", repeat=0, **kwargs)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def rows(report):
    return {r.key: r for r in report.rows}


# ---------------------------------------------------------------- the rewrite raising

SEED = """\
    import torch
    import torch.nn.functional as F

    x = torch.randn(4, 3, requires_grad=True)
    y = torch.randn(4, 3, requires_grad=True)


    def step():
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -1 * F.mse_loss(x, y.detach())
        l2.backward()
    """


def test_a_rewrite_that_raises_is_a_mismatch_with_the_exception_in_one_line():
    rewritten = SEED.replace("l2.backward()", "l2.backward()\n        raise ZeroDivisionError('float division by zero\\nmore text')")
    report = verify(SEED, rewritten)
    assert report.rewrite_raised and not report.ok
    assert report.rewrite_exception == "ZeroDivisionError: float division by zero"
    (first, verdict) = format_report(report).splitlines()
    assert verdict.startswith("MISMATCH: the rewrite raised ZeroDivisionError: float division by zero where the original ran")
    assert "line 13" in verdict


def test_an_original_that_raises_is_an_error_not_a_mismatch():
    bad = SEED.replace("l2.backward()", "l2.backward()\n        raise RuntimeError('bad snippet')")
    report = verify(bad, SEED)
    assert not report.rewrite_raised and report.error_side == "original"
    assert format_report(report).splitlines()[-1].startswith("ERROR: original step failed: RuntimeError: bad snippet")


def test_cli_rewrite_raising_exits_1_and_original_raising_exits_2(tmp_path):
    snippet = write(tmp_path / "seed.py", SEED)
    # The rewrite imports grad_scale from a module that does not exist: it raises, the original runs.
    config = write(tmp_path / "gradfix.toml", 'grad-scale-import = "no_such_module_for_gradfix"\n')
    result = invoke("verify", snippet, "--device", "cpu", "--repeat", "0", "--config", config)
    assert result.exit_code == 1, result.output
    assert "MISMATCH: the rewrite raised ModuleNotFoundError: No module named 'no_such_module_for_gradfix'" in result.stdout
    assert "Traceback" not in result.output

    broken = write(tmp_path / "broken.py", SEED.replace("l2.backward()", "l2.backward()\n        raise RuntimeError('bad snippet')"))
    result = invoke("verify", broken, "--device", "cpu", "--repeat", "0")
    assert result.exit_code == 2, result.output
    assert "ERROR: original step failed: RuntimeError: bad snippet" in result.stdout


# ---------------------------------------------------------------- optimizer steps amplify rounding

# Three passes whose coefficients sum to zero in exact arithmetic (0.3 + 0.1 - 0.4): the
# original's gradients are rounding residue (~1e-8), the rewrite's exactly zero.
ADAM_ORIGINAL = """\
    import torch
    import torch.nn as nn

    W = nn.Linear(6, 1)
    V = nn.Linear(6, 6)
    opt = torch.optim.Adam(list(W.parameters()) + list(V.parameters()), lr=1e-2)
    x = torch.randn(16, 6)


    def step():
        opt.zero_grad()
        h = V(x)
        (W(h).sum() * 0.3).backward(retain_graph=True)
        (W(h).sum() * 0.1).backward(retain_graph=True)
        (W(h).sum() * COEF).backward()
        opt.step()
        AFTER
    """

ADAM_REWRITTEN = """\
    import torch
    import torch.nn as nn

    W = nn.Linear(6, 1)
    V = nn.Linear(6, 6)
    opt = torch.optim.Adam(list(W.parameters()) + list(V.parameters()), lr=1e-2)
    x = torch.randn(16, 6)


    def step():
        opt.zero_grad()
        h = V(x)
        W(h)
        for p in list(W.parameters()) + list(V.parameters()):
            p.grad = torch.zeros_like(p)
        opt.step()
        AFTER
    """


def adam(coef="-0.4", after="pass", after_new=None):
    original = ADAM_ORIGINAL.replace("COEF", coef).replace("AFTER", after)
    rewritten = ADAM_REWRITTEN.replace("AFTER", after if after_new is None else after_new)
    return verify(original, rewritten)


def test_adam_amplifying_rounding_of_a_zero_gradient_is_ok_with_a_note():
    report = adam()
    by_key = rows(report)
    # The false alarm is real: the values differ far beyond float32's tolerance...
    assert by_key["V.weight"].max_abs > 1e-3
    # ...while the gradients agree.
    assert by_key["V.weight.grad"].ok and not by_key["V.weight.grad"].explained
    assert report.ok, format_report(report, verbose=True)
    explained = [r.key for r in report.rows if r.explained]
    assert set(explained) == {"W.weight", "V.weight", "V.bias"}
    assert all(by_key[k].ok and by_key[k].max_abs > 1e-3 for k in explained)
    text = format_report(report)
    assert "note     V.weight:" in text and "Adam" in text and "amplifies gradient rounding" in text
    assert text.splitlines()[-1].startswith("OK: ") and "differ only after optimizer steps" in text


def test_a_real_gradient_difference_before_the_step_is_still_a_mismatch():
    report = adam(coef="-0.3")  # the original's true gradient is 0.1 * dW, the rewrite's 0
    assert not report.ok
    by_key = rows(report)
    assert not by_key["V.weight.grad"].ok and not by_key["V.weight"].ok and not by_key["V.weight"].explained


def test_a_real_gradient_difference_hidden_by_zero_grad_after_the_step_is_still_a_mismatch():
    # Gradients are gone (None on both sides) by the time the state is collected:
    # only the step-time record shows that they differed.
    report = adam(coef="-0.3", after="opt.zero_grad(set_to_none=True)")
    by_key = rows(report)
    assert by_key["V.weight.grad"].ok  # None in both
    assert not report.ok and not by_key["V.weight"].ok and not by_key["V.weight"].explained


def test_a_parameter_changed_outside_the_optimizer_is_not_explained():
    report = adam(after="pass", after_new="V.weight.data.add_(0.01)")
    by_key = rows(report)
    assert not report.ok and not by_key["V.weight"].ok and not by_key["V.weight"].explained


def test_a_frozen_parameter_without_gradient_on_both_sides_does_not_block_the_note():
    frozen = "frozen = nn.Parameter(torch.ones(3))\n    opt.add_param_group({'params': [frozen]})\n    x ="
    original = ADAM_ORIGINAL.replace("COEF", "-0.4").replace("AFTER", "pass").replace("x =", frozen, 1)
    rewritten = ADAM_REWRITTEN.replace("AFTER", "pass").replace("x =", frozen, 1)
    report = verify(original, rewritten)
    assert report.ok and rows(report)["V.weight"].explained and rows(report)["frozen.grad"].max_abs == 0.0
    # A gradient on one side only is a difference, not a skip.
    report = verify(original, rewritten.replace("opt.step()", "frozen.grad = torch.zeros(3)\n        opt.step()"))
    assert not report.ok and not any(r.explained for r in report.rows)


def test_a_closure_optimizer_is_not_explained():
    original = ADAM_ORIGINAL.replace("COEF", "-0.4").replace("AFTER", "pass").replace("opt.step()", "opt.step(lambda: 0.0)")
    rewritten = ADAM_REWRITTEN.replace("AFTER", "pass").replace("opt.step()", "opt.step(lambda: 0.0)")
    report = verify(original, rewritten)
    assert not report.ok and not any(r.explained for r in report.rows)


def test_a_value_computed_after_the_step_is_compared_as_it_is():
    report = adam(after="global after\n        after = W(x).sum().item()")
    by_key = rows(report)
    assert by_key["W.weight"].explained and not by_key["after"].ok


# ---------------------------------------------------------------- autocast: the compute dtype's tolerance

AUTOCAST_ORIGINAL = """\
    import torch
    import torch.nn.functional as F

    W = torch.randn(64, 64)
    x = torch.randn(32, 64, requires_grad=True)
    y = torch.randn(32, 64, requires_grad=True)


    def f(a, b):
        return F.mse_loss(a @ W, b @ W)


    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            l1 = f(x.detach(), y)
            l1.backward(retain_graph=True)
            l2 = -0.3 * f(x, y.detach())
            l2.backward()
    """

AUTOCAST_REWRITTEN = """\
    import torch
    import torch.nn.functional as F
    from gradfix.autograd import grad_scale

    W = torch.randn(64, 64)
    x = torch.randn(32, 64, requires_grad=True)
    y = torch.randn(32, 64, requires_grad=True)


    def f(a, b):
        return F.mse_loss(a @ W, b @ W)


    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            l1_l2 = f(grad_scale(x, COEF), y)
            l1 = l1_l2.detach()
            l2 = -0.3 * l1_l2.detach()
            l1_l2.backward()
    """


def test_bf16_autocast_uses_the_bf16_tolerance():
    report = verify(AUTOCAST_ORIGINAL, AUTOCAST_REWRITTEN.replace("COEF", "-0.3"))
    assert report.compute_dtype == torch.bfloat16
    grad = rows(report)["x.grad"]
    # bf16 rounding: far outside float32's tolerance, inside bf16's.
    assert grad.max_abs > 1e-5 and grad.ok
    assert report.ok, format_report(report, verbose=True)
    text = format_report(report)
    assert "tolerance: bfloat16 (rtol 0.02, atol 0.001)" in text and 'torch.autocast("cpu", dtype=torch.bfloat16)' in text


def test_bf16_autocast_still_finds_a_real_difference():
    report = verify(AUTOCAST_ORIGINAL, AUTOCAST_REWRITTEN.replace("COEF", "-0.33"))
    assert report.compute_dtype == torch.bfloat16
    assert not report.ok and not rows(report)["x.grad"].ok


def test_without_autocast_the_float32_tolerance_applies():
    original = AUTOCAST_ORIGINAL.replace('with torch.autocast("cpu", dtype=torch.bfloat16):', "if True:")
    rewritten = AUTOCAST_REWRITTEN.replace('with torch.autocast("cpu", dtype=torch.bfloat16):', "if True:")
    assert verify(original, rewritten.replace("COEF", "-0.3")).ok
    report = verify(original, rewritten.replace("COEF", "-0.3001"))  # 3e-4 relative: inside bf16's, outside float32's
    assert report.compute_dtype is None and not report.ok


@pytest.mark.parametrize(
    "source, expected",
    [
        ('with torch.autocast("cpu", dtype=torch.bfloat16):\n    pass\n', torch.bfloat16),
        ('with torch.autocast(device_type="cuda", dtype=torch.float16):\n    pass\n', torch.float16),
        ('with torch.autocast("cpu"):\n    pass\n', torch.bfloat16),
        ('with torch.autocast("cuda"):\n    pass\n', torch.float16),
        ("with torch.cuda.amp.autocast():\n    pass\n", torch.float16),
        ("with torch.cpu.amp.autocast():\n    pass\n", torch.bfloat16),
        ("from torch import autocast\nwith autocast('cuda', dtype=torch.half):\n    pass\n", torch.float16),
        ("@torch.autocast('cuda', dtype=dt)\ndef f():\n    pass\n", torch.bfloat16),  # unknown dtype: 16-bit
        ('with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):\n    pass\n', None),
        ("with torch.cuda.amp.autocast(False):\n    pass\n", None),
        ('with torch.autocast("cuda", dtype=torch.float32):\n    pass\n', None),
        ("x = autocast\n", None),
        ("def f(:\n", None),
    ],
)
def test_autocast_detection(source, expected):
    found = autocast_dtype(source)
    assert (found[0] if found else None) == expected


# ---------------------------------------------------------------- through the CLI, with the engine's rewrite

AUTOCAST_ADAM = """\
    import torch
    import torch.nn as nn

    D = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.Adam(D.parameters(), lr=1e-2)
    x = torch.randn(32, 32, requires_grad=True)
    y = torch.randn(32, 32, requires_grad=True)


    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            l1 = D(torch.cat([x.detach(), y], 1)).mean()
            l1.backward(retain_graph=True)
            l2 = -0.3 * D(torch.cat([x, y.detach()], 1)).mean()
            l2.backward()
        opt.step()
    """


def test_cli_bf16_autocast_with_an_adam_step_is_ok(tmp_path):
    snippet = write(tmp_path / "amp.py", AUTOCAST_ADAM)
    result = invoke("verify", snippet, "--device", "cpu", "--repeat", "0")
    assert result.exit_code == 0, result.output
    assert "rewrote 1 finding" in result.stdout
    assert "tolerance: bfloat16" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("OK: ")


def test_cli_bf16_autocast_with_a_wrong_unsafe_rewrite_is_a_mismatch(tmp_path):
    # D passed in: its parameters are not proven; the unsafe rewrite gives them
    # dD/dθ instead of 0.7 dD/dθ, a 30% difference that no tolerance hides.
    wrong = AUTOCAST_ADAM.replace("    def step():\n        opt.zero_grad()", "    def train(D):\n        opt.zero_grad()")
    wrong += "\n\n    def step():\n        train(D)\n"
    snippet = write(tmp_path / "amp_unsafe.py", wrong)
    result = invoke("verify", snippet, "--device", "cpu", "--repeat", "0", "--unsafe-fixes")
    assert result.exit_code == 1, result.output
    assert "MISMATCH: " in result.stdout and "D.0.weight" in result.stdout
