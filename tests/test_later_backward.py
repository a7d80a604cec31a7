"""A later backward through a graph that `retain_graph=True` kept alive, spelled as a call of code in
the file: a helper function, a method (`self.manual_backward(...)`, `trainer.step()`), a closure
handed to `opt.step(closure)`, a lambda. The merge (GF001, GF003, GF004) frees that graph, so its
fix must be unsafe, and GF005 must not report the retain. Each case's original runs; the rewrite
`--unsafe-fixes` would write is executed and shown to raise."""

from __future__ import annotations

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

SETUP = """import torch

torch.manual_seed(0)
enc = torch.nn.Linear(3, 3)
x = torch.randn(4, 3)
y0 = torch.randn(4, 3, requires_grad=True)
opt = torch.optim.SGD(enc.parameters(), lr=0.1)


def f(a, b):
    return ((a - b) ** 2).mean()


"""

# `y`'s part of the graph is reachable from l1 only: l1.backward(retain_graph=True) keeps it, l2's
# backward does not free it, and the later backward through `y` works in the original.
PAIR = """    h = enc(x)
    y = y0 * 2.0
    l1 = f(h.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * f(h, y.detach())
    l2.backward()
"""

CASES = {
    "helper_function": SETUP + """def extra_backward(t):
    t.sum().backward()


def step():
""" + PAIR + """    extra_backward(y)
""",
    "helper_two_levels": SETUP + """def inner(t):
    torch.autograd.backward(t.sum())


def outer(t):
    inner(t)


def step():
""" + PAIR + """    outer(y)
""",
    "closure_handed_to_step": SETUP + """def step():
""" + PAIR + """
    def closure():
        (y ** 2).sum().backward()
        return y.sum()

    opt.step(closure)
""",
    "lambda_handed_to_step": SETUP + """def step():
""" + PAIR + """    opt.step(lambda: (y ** 2).sum().backward())
""",
    "manual_backward_method": SETUP + """class Module:
    def manual_backward(self, loss):
        loss.backward()

    def training_step(self):
""" + PAIR.replace("    ", "        ") + """        self.manual_backward(y.sum())


def step():
    Module().training_step()
""",
    "method_of_an_instance": SETUP + """class Extra:
    def run(self, t):
        t.sum().backward()


extra = Extra()


def step():
""" + PAIR + """    extra.run(y)
""",
}


def _lint(source: str, codes, unsafe: bool = False):
    return lint_bytes(source.encode(), "t.py", LintOptions(tuple(codes), fix=True, unsafe_fixes=unsafe))


@pytest.mark.parametrize("name", sorted(CASES))
def test_merge_before_a_later_backward_is_unsafe_and_its_rewrite_raises(name):
    source = CASES[name]
    result = _lint(source, ["GF001", "GF003", "GF004"])
    assert result.error is None
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", False)]
    assert "may use a graph that `retain_graph=True` kept alive" in result.findings[0].message
    assert result.fixed is None  # nothing safe to apply
    harness = pytest.importorskip("gradfix.harness")
    rewritten = _lint(source, ["GF001"], unsafe=True).fixed
    assert rewritten is not None
    report = harness.verify_pair(source, rewritten.decode(), filename="t.py", device="cpu", repeat=0)
    assert report.error is not None and "backward through the graph a second time" in report.error


@pytest.mark.parametrize("name", sorted(CASES))
def test_gf005_does_not_report_a_retain_a_later_backward_needs(name):
    # Without l2's backward, the helper's is the only later backward through l1's retained graph.
    source = CASES[name].replace("    l2.backward()\n", "    l2.item()\n")
    result = _lint(source, ["GF005"])
    assert result.error is None
    assert result.findings == []


def test_a_method_of_the_file_that_does_not_backpropagate_is_not_suspect():
    source = SETUP + """class Logger:
    def log(self, value):
        print(value)


logger = Logger()


def step():
""" + PAIR + """    logger.log(l2.item())
    opt.step()
"""
    result = _lint(source, ["GF001"])
    assert [(f.code, f.fixable) for f in result.findings] == [("GF001", True)]


LOOP_OVER_A_PRODUCT = """import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    # two graph-free tensors multiplied: `base` holds a graph (the product saves its factors)
    base = torch.randn(3, requires_grad=True) * torch.randn(3)
    for i in range(2):
        l1 = (base * 2.0).sum()
        l2 = (w * 3.0).sum()
        l1.backward(retain_graph=True)
        l2.backward()
"""


def test_a_product_of_graph_free_tensors_built_before_the_loop_holds_a_graph():
    result = _lint(LOOP_OVER_A_PRODUCT, ["GF003"])
    assert [(f.code, f.line, f.fixable) for f in result.findings] == [("GF003", 13, False)]
    assert "`base` (line 9) is built before the loop" in result.findings[0].message
    harness = pytest.importorskip("gradfix.harness")
    rewritten = _lint(LOOP_OVER_A_PRODUCT, ["GF003"], unsafe=True).fixed
    report = harness.verify_pair(LOOP_OVER_A_PRODUCT, rewritten.decode(), filename="t.py", device="cpu", repeat=0)
    assert report.error is not None and "backward through the graph a second time" in report.error


# Values that enter a loop from outside the function and are carried or reused across iterations:
# a parameter rebound in the loop (`h = cell(x, h)`), a variable of an enclosing function. Both
# made GF005 offer a safe fix that raised in iteration 2 (and a merge in such a loop is not exact).
CARRIED_PARAMETER = """import torch

torch.manual_seed(0)
cell = torch.nn.GRUCell(3, 3)
xs = torch.randn(3, 2, 3)


def train(h):
    for x in xs:
        h = cell(x, h)
        loss = h.pow(2).sum()
        loss.backward(retain_graph=True)


def once():
    # Passes GF005's precheck (which alone skipped the file and hid the bug): reported, line 18.
    loss = cell(xs[0], torch.zeros(2, 3)).sum()
    loss.backward(retain_graph=True)


train(torch.zeros(2, 3))
"""

ENCLOSING_VARIABLE = """import torch

torch.manual_seed(0)
head = torch.nn.Linear(3, 1)
enc = torch.nn.Linear(3, 3)
x = torch.randn(2, 3)


def outer():
    h = enc(x)

    def train():
        for i in range(2):
            loss = head(h).sum()
            loss.backward(retain_graph=True)

    train()


outer()
"""


@pytest.mark.parametrize("source", [CARRIED_PARAMETER, ENCLOSING_VARIABLE], ids=["carried_parameter", "enclosing_variable"])
def test_gf005_keeps_a_retain_that_the_next_iteration_needs(source):
    result = _lint(source, ["GF005"])
    assert result.error is None
    assert [f.line for f in result.findings] == ([18] if "def once" in source else [])
    harness = pytest.importorskip("gradfix.harness")
    without = source.replace("        loss.backward(retain_graph=True)", "        loss.backward()")
    report = harness.verify_pair(source, without, filename="t.py", device="cpu", repeat=0)
    assert report.error is not None and "backward through the graph a second time" in report.error


MERGE_ON_AN_ENCLOSING_VARIABLE = """import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
base = torch.randn(3, requires_grad=True)


def outer():
    h = base * 2.0

    def step():
        for i in range(2):
            l1 = (h * 2.0).sum()
            l2 = (w * 3.0).sum()
            l1.backward(retain_graph=True)
            l2.backward()

    step()


outer()
"""


def test_a_merge_in_a_loop_reading_an_enclosing_variable_is_unsafe():
    result = _lint(MERGE_ON_AN_ENCLOSING_VARIABLE, ["GF003"])
    assert [(f.code, f.line, f.fixable) for f in result.findings] == [("GF003", 15, False)]
    assert "`h` (read on line 13) is bound outside the function" in result.findings[0].message
    harness = pytest.importorskip("gradfix.harness")
    rewritten = _lint(MERGE_ON_AN_ENCLOSING_VARIABLE, ["GF003"], unsafe=True).fixed
    report = harness.verify_pair(MERGE_ON_AN_ENCLOSING_VARIABLE, rewritten.decode(), filename="t.py", device="cpu", repeat=0)
    assert report.error is not None and "backward through the graph a second time" in report.error


# An augmented assignment to a tensor from outside the call is in place: that tensor keeps this
# graph for whoever backpropagates through it later (a GF005 safe fix raised at the caller's backward).
AUGMENTED = """import torch

torch.manual_seed(0)
enc = torch.nn.Linear(3, 3)
x = torch.randn(2, 3)
acc = torch.zeros(2, 3)


def accumulate(total):
    h = enc(x)
    loss = h.pow(2).sum()
    loss.backward(retain_graph=True)
    {UPDATE}


accumulate(acc)
acc.sum().backward()
"""


@pytest.mark.parametrize("update", ["total += h", "t = total\n    t += h", "t = total.view(-1)\n    t += h.view(-1)"])
def test_gf005_keeps_a_retain_whose_graph_an_augmented_assignment_hands_out(update):
    source = AUGMENTED.replace("{UPDATE}", update)
    result = _lint(source, ["GF005"])
    assert [(f.line, f.fixable) for f in result.findings] == [(12, False)]
    assert "may change a tensor from outside the call in place" in result.findings[0].message
    harness = pytest.importorskip("gradfix.harness")
    rewritten = _lint(source, ["GF005"], unsafe=True).fixed
    report = harness.verify_pair(source, rewritten.decode(), filename="t.py", device="cpu", repeat=0)
    assert report.error is not None and "backward through the graph a second time" in report.error


def test_gf005_an_augmented_assignment_to_a_new_local_is_no_reason():
    source = AUGMENTED.replace("{UPDATE}", "t = h * 1.0\n    t += h\n    print(float(t.sum()))").replace(
        "acc.sum().backward()\n", ""
    )
    result = _lint(source, ["GF005"])
    assert [(f.line, f.fixable) for f in result.findings] == [(12, True)]
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(source, result.fixed.decode(), filename="t.py", device="cpu", repeat=0)
    assert report.error is None and all(r.ok for r in report.rows)


# A module-level container that another function of the file fills with a graph's tensors:
# bound to `{}` at module level, it is not graph-free (found by the fuzzer's loop_closure steps).
FILLED_ELSEWHERE = """import torch

torch.manual_seed(0)
a = torch.randn(3, requires_grad=True)
w = torch.randn(3, requires_grad=True)
feats = {}


def prepare():
    feats["a"] = torch.sin(a)


def train():
    for it in range(2):
        l1 = (feats["a"] * 2.0).sum()
        l2 = (w * 3.0).sum()
        l1.backward(retain_graph=True)
        l2.backward()


prepare()
train()
"""


def test_a_module_container_filled_by_another_function_is_not_graph_free():
    result = _lint(FILLED_ELSEWHERE, ["GF003"])
    assert [(f.code, f.line, f.fixable) for f in result.findings] == [("GF003", 17, False)]
    assert "`feats` (line 10) is built before the loop" in result.findings[0].message
    harness = pytest.importorskip("gradfix.harness")
    rewritten = _lint(FILLED_ELSEWHERE, ["GF003"], unsafe=True).fixed
    report = harness.verify_pair(FILLED_ELSEWHERE, rewritten.decode(), filename="t.py", device="cpu", repeat=0)
    assert report.error is not None and "backward through the graph a second time" in report.error
