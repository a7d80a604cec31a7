"""GF005's precheck: it must never rule out a file the rule reports, and should rule out the
files that use `retain_graph=True` for a second backward (torch's own sources)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradfix.engine import lint_bytes, prefilter
from gradfix.options import LintOptions
from gradfix.rules import gf005_needless_retain_graph as gf005

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "GF005"
REPORTED = sorted(p for kind in ("positive", "unsafe") for p in (FIXTURES / kind).glob("*.py") if not p.name.endswith(".fixed.py"))


@pytest.mark.parametrize("path", REPORTED, ids=[p.stem for p in REPORTED])
def test_every_reported_fixture_passes_the_prefilter(path):
    data = path.read_bytes()
    assert prefilter(data, [gf005]) == [gf005]
    assert lint_bytes(data, str(path), LintOptions(("GF005",))).findings


@pytest.mark.parametrize(
    "body",
    [
        "    loss.backward(retain_graph=True)\n    other.backward()\n",  # a later backward
        "    for _ in range(2):\n        loss.backward(retain_graph=True)\n",  # a loop reading a parameter
        "    for out in leaves():\n        out.sum().backward(retain_graph=True)\n",  # a loop over what a call returns
        "    dist_autograd.backward(ctx, [loss], retain_graph=True)\n",  # positional arguments
        "    loss.backward(retain_graph=True, create_graph=True)\n",
        "    loss.backward(retain_graph=False)\n",
    ],
)
def test_the_precheck_rules_out_what_the_rule_never_reports(body):
    data = ("import torch\n\n\ndef step(loss, other, ctx, dist_autograd):\n" + body).encode()
    assert prefilter(data, [gf005]) == []
    assert lint_bytes(data, "t.py", LintOptions(("GF005",))).findings == []


def test_a_loop_that_backpropagates_a_graph_from_before_it_again_is_not_reported():
    # `loss` (a parameter) comes into the loop from outside it: the next iteration goes through its graph again.
    data = b"import torch\n\n\ndef step(loss):\n    for _ in range(2):\n        loss.backward(retain_graph=True)\n"
    assert lint_bytes(data, "t.py", LintOptions(("GF005",))).findings == []


def test_in_a_loop_the_message_says_the_next_iteration_too():
    data = FIXTURES.joinpath("positive", "p05_training_loop.py").read_bytes()
    (finding,) = lint_bytes(data, "p05.py", LintOptions(("GF005",))).findings
    assert finding.message.startswith(
        "`retain_graph=True` keeps the graph of `loss` alive, but nothing later in this iteration or the next of `train` "
        "backpropagates through it"
    )


def test_module_level_outside_a_main_guard_is_reported_with_an_unsafe_fix():
    # Code that imports the module (or a notebook's later cell) may backpropagate through `loss` again.
    data = b"import torch\nx = torch.ones(2, requires_grad=True)\nloss = (x * 2).sum()\nloss.backward(retain_graph=True)\n"
    (finding,) = lint_bytes(data, "t.py", LintOptions(("GF005",))).findings
    assert (finding.line, finding.col, finding.fixable) == (4, 15, False)
    assert finding.message == (
        "`retain_graph=True` keeps the graph of `loss` alive, but nothing later in the module backpropagates through it: "
        "its saved activations stay in memory until the graph is freed [unsafe fix: module-level code outside "
        "`if __name__ == \"__main__\":` (line 4) also runs for code that imports the module (or in a notebook, before "
        "later cells): that code may backpropagate through `loss` again]"
    )


LOOP_OVER_PARAMETERS = """import torch
import torch.nn as nn

torch.manual_seed(0)
batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]


def train(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward(retain_graph=True)
        optimizer.step()


def step():
    model = nn.Linear(4, 1)
    train(model, batches, torch.optim.SGD(model.parameters(), lr=0.1))
"""


def test_a_loop_over_what_the_caller_passes_is_reported_with_an_unsafe_fix():
    data = LOOP_OVER_PARAMETERS.encode()
    assert prefilter(data, [gf005]) == [gf005]
    (finding,) = lint_bytes(data, "t.py", LintOptions(("GF005",))).findings
    assert (finding.line, finding.col, finding.fixable) == (13, 23, False)
    assert "`loader`, `optimizer`, `model` come into the loop from the caller" in finding.message
    # With a stateless model, as here, the rewrite is in fact exact.
    harness = pytest.importorskip("gradfix.harness")
    fixed = lint_bytes(data, "t.py", LintOptions(("GF005",), fix=True, unsafe_fixes=True)).fixed.decode()
    assert "loss.backward()\n" in fixed
    report = harness.verify_pair(LOOP_OVER_PARAMETERS, fixed, filename="t.py", device="cpu", repeat=0)
    assert report.error is None and report.rows and all(r.ok for r in report.rows)


@pytest.mark.parametrize(
    "use",
    [
        "loss = ((model(x) - y) ** 2).mean() + h.sum()",  # a parameter read as a tensor
        "loss = ((model(x) - y) ** 2).mean() * scale.weight.sum()",  # an attribute of one
    ],
)
def test_a_parameter_read_as_a_value_in_the_loop_is_not_reported(use):
    source = LOOP_OVER_PARAMETERS.replace("def train(model, loader, optimizer):", "def train(model, loader, optimizer, h=None, scale=None):")
    source = source.replace("loss = ((model(x) - y) ** 2).mean()", use)
    assert lint_bytes(source.encode(), "t.py", LintOptions(("GF005",))).findings == []


def _gf005_alone_and_with_all(data: bytes):
    """GF005's findings through the prefilter, and its visitor's on the parsed file regardless."""
    from gradfix import engine

    alone = lint_bytes(data, "t.py", LintOptions(("GF005",))).findings
    parsed = engine._parse(data)
    together = engine._run(parsed, "t.py", [gf005])[0] if not isinstance(parsed, str) else []
    return [(f.line, f.col, f.message) for f in alone], [(f.line, f.col, f.message) for f in sorted(together, key=lambda f: f.sort_key())]


ALL_FIXTURES = sorted(p for p in FIXTURES.parent.glob("GF*/*/*.py") if not p.name.endswith(".fixed.py"))


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[f"{p.parent.parent.name}/{p.stem}" for p in ALL_FIXTURES])
def test_gf005_reports_the_same_alone_as_with_every_rule(path):
    # The precheck must never rule out a file the visitor reports (`noqa` aside, as in the fixtures).
    alone, together = _gf005_alone_and_with_all(path.read_bytes())
    assert alone == together


def test_a_gan_step_with_a_fresh_generator_loss_is_reported_alone_too():
    from tests.test_fresh_backward import GAN

    source = GAN.replace("    loss_fake.backward()\n", "    loss_fake.backward(retain_graph=True)\n")
    alone, together = _gf005_alone_and_with_all(source.encode())
    # Line 20 too: `loss_fake`, bound before it, read only by its own backward, goes through a
    # forward of its own (`D(fake.detach())`), not through `loss_real`'s graph (`fresh.py`, kept names).
    assert alone == together and [line for line, _, _ in alone] == [20, 21]
    result = lint_bytes(source.encode(), "gan.py", LintOptions(("GF005",), fix=True))
    assert [f.fixable for f in result.findings] == [True, True]
    assert "retain_graph" not in result.fixed.decode()
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(source, result.fixed.decode(), filename="gan.py", device="cpu", repeat=0)
    assert report.error is None and report.rows and all(r.ok for r in report.rows)


CLOSURE = '''\
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


def step():
    h = (x @ w).tanh()

    def closure():
        loss = h.pow(2).mean()
        loss.backward(retain_graph=True)

    closure()
    closure()
'''


def test_a_closure_reading_a_value_of_the_function_around_it_keeps_an_unsafe_fix():
    # Called twice (an LBFGS closure), it backpropagates through `h`'s graph each time: without
    # `retain_graph=True` the second call raises (review, stop 21; a wrong safe fix before).
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    (finding,) = lint_bytes(CLOSURE.encode(), "t.py", LintOptions(("GF005",))).findings
    assert (finding.line, finding.col, finding.fixable) == (13, 23, False)
    assert finding.fix.unsafe_reason == (
        "`closure` reads `h` from the function around it: called again (an `LBFGS` closure), it may "
        "backpropagate through that value's graph again, which the fix frees"
    )
    fixed = lint_bytes(CLOSURE.encode(), "t.py", LintOptions(("GF005",), fix=True, unsafe_fixes=True)).fixed.decode()
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(CLOSURE, fixed, filename="t.py", device="cpu", repeat=0)
    assert report.error_side == "rewritten" and "second time" in report.error


GLOBAL_GRAPH = '''\
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)
h = (x @ w).tanh()


def step():
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)
'''


def test_a_function_reading_a_module_level_graph_keeps_an_unsafe_fix():
    # `h` holds a graph built once at import: the next call of `step` backpropagates through it
    # again, which only `retain_graph=True` allows (review, stop 21; a wrong safe fix before).
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions

    (finding,) = lint_bytes(GLOBAL_GRAPH.encode(), "t.py", LintOptions(("GF005",))).findings
    assert (finding.line, finding.col, finding.fixable) == (11, 19, False)
    assert finding.fix.unsafe_reason == (
        "`step` reads `h`, built at module level (line 6) and not proven free of a graph: the next call may "
        "backpropagate through that graph again, which the fix frees"
    )
    # Executed: the harness calls `step()` once; a second call shows it.
    fixed = lint_bytes(GLOBAL_GRAPH.encode(), "t.py", LintOptions(("GF005",), fix=True, unsafe_fixes=True)).fixed.decode()
    for source, raises in ((GLOBAL_GRAPH, False), (fixed, True)):
        namespace: dict = {}
        exec(compile(source, "t.py", "exec"), namespace)
        namespace["step"]()
        if raises:
            with pytest.raises(RuntimeError, match="second time"):
                namespace["step"]()
        else:
            namespace["step"]()
    # A module-level tensor without a graph is no reason: the fix is safe.
    plain = GLOBAL_GRAPH.replace("h = (x @ w).tanh()", "h = torch.randn(8, 1)").replace("h.pow(2).mean()", "(h * w.sum()).pow(2).mean()")
    (finding,) = lint_bytes(plain.encode(), "t.py", LintOptions(("GF005",))).findings
    assert finding.fixable, finding.message


CALLED_IN_FILE = '''\
import torch

w = torch.randn(3, 1, requires_grad=True)
x = torch.randn(4, 3)
log = []


def inner(h, scale):
    loss = (h @ w).pow(2).mean() * scale
    loss.backward(retain_graph=True)
    log.append(loss.item())


def step():
{body}
'''


@pytest.mark.parametrize(
    "body, safe",
    [
        ("    inner(x, 2.0)\n    inner(x, 2.0)", True),  # a module-level name bound to a factory's tensor
        ("    z = torch.randn(4, 3)\n    inner(z, 1.0)\n    inner(z, 1.0)", True),  # a local bound to one
        ("    h = (x @ w).expand(4, 3).tanh()\n    inner(h, 1.0)\n    inner(h, 1.0)", False),  # a graph built outside
        ("    z = torch.zeros(4, 3)\n    z.add_(w.t())\n    inner(z, 1.0)\n    inner(z, 1.0)", False),  # written into in place
        ("    inner(x * w.t(), 1.0)", False),  # an expression not proven graph-free
    ],
    ids=["module_factory", "local_factory", "graph_from_outside", "written_in_place", "expression"],
)
def test_a_caller_in_the_file_must_pass_graph_free_values(body, safe):
    """`inner(h); inner(h)` with one graph-carrying `h`: dropping `retain_graph=True` in `inner`
    breaks the second call (review, stop 21); the callers the file holds are read (stop 22)."""
    src = CALLED_IN_FILE.format(body=body)
    findings = lint_bytes(src.encode(), "t.py", LintOptions(("GF005",))).findings
    assert [(f.line, f.col, f.fixable) for f in findings] == [(10, 19, safe)]
    if not safe:
        assert "`inner` is called at line" in findings[0].message
        assert "not proven free of a graph" in findings[0].message
