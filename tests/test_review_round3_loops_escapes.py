"""Review round 3, reviewer H: safe GF003/GF005 fixes in loops and on losses that leave the call.

Causes, each now making the fix unsafe (or, for GF005 in a loop, the finding not reported:
retaining may be the point there):

- A name the loop body binds was taken as new in each iteration. It is one only when bound before
  every read of it on every path through the body (`loops._fresh_in_each_iteration`); bound under
  an `if` (a refresh every k steps) or after its read (`h_prev = h` at the end), it carries the
  previous iteration's graph (H_01 to H_04).
- `loops.graph_free` took any capitalised `torch.*` class built as graph-free: now only optimizers
  and schedulers, the classes of `torch.nn` itself but its losses, and a few settings objects;
  any other class (`torch.utils.data.TensorDataset(feats, y)`) only when its arguments are
  (H_05, H_06). A dict display's keys are checked with its values (H_07). The functions and
  lambdas a loop reads carry what they read from around them and their defaults
  (`loops._add_closure_reads`, H_08).
- GF005 trusted `x.train(...)`, `x.eval(...)`, `x.parameters(...)` ... whatever their arguments
  (H_09: a method of the file named `train` keeps the loss); an `assert`'s message and a `raise`'s
  exception carry a tensor out of the call (H_10); `isinstance` runs a metaclass
  `__instancecheck__` of the file (H_11).
"""

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round3").glob("H_*.py"))

EXPECTED = {
    "H_01_gf005_loop_refresh_every_k": None,
    "H_02_gf003_loop_refresh_every_k": ("GF003", "`feats` is not bound afresh before every read of it in an iteration"),
    "H_03_gf005_loop_read_before_bind_prev_step": None,
    "H_04_gf003_loop_read_before_bind_prev_step": ("GF003", "`h_prev` is not bound afresh before every read of it"),
    "H_05_gf003_loop_over_tensordataset": ("GF003", "iterates over `ds`"),
    "H_06_gf005_main_loop_over_tensordataset": ("GF005", "`ds` comes into the loop from before it"),
    "H_07_gf005_loop_over_dict_with_tensor_keys": None,
    "H_08_gf003_loop_closure_reads_graph": ("GF003", "`h` (line 10) is built before the loop"),
    "H_09_gf005_method_named_train_keeps_loss": ("GF005", "`self.train()` (line 16) is not proven"),
    "H_10_gf005_assert_message_carries_loss": ("GF005", "the message of `assert` (line 12)"),
    "H_11_gf005_isinstance_metaclass_keeps_loss": ("GF005", "`isinstance()` (line 24) is not proven"),
}


def test_every_case_has_an_expectation():
    assert sorted(path.stem for path in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


# -- the helpers behind them ----------------------------------------------------------------------

import libcst as cst  # noqa: E402

from gradfix.analysis.loops import _fresh_in_each_iteration, graph_free  # noqa: E402
from gradfix.engine import lint_bytes  # noqa: E402
from gradfix.options import LintOptions  # noqa: E402


def _fresh(source: str):
    module = cst.parse_module("import torch\n" + source)
    return _fresh_in_each_iteration(module.body[1], module)


@pytest.mark.parametrize(
    "source, name, fresh",
    [
        ("for x in xs:\n    with torch.no_grad():\n        out = f(x)\n    loss = out.sum()\n", "out", True),
        # (a `with` of an unknown context manager may swallow an exception: round 4, N_03)
        ("for x in xs:\n    with ctx():\n        out = f(x)\n    loss = out.sum()\n", "out", False),
        ("for x in xs:\n    if a:\n        out = f(x)\n    else:\n        out = g(x)\n    loss = out.sum()\n", "out", True),
        ("for x in xs:\n    if a:\n        continue\n    out = f(x)\n    loss = out.sum()\n", "out", True),
        ("for x in xs: out = f(x); loss = out.sum()\n", "out", True),
        ("for x in xs:\n    if a:\n        out = f(x)\n    loss = out.sum()\n", "out", False),
        ("for x in xs:\n    loss = prev.sum()\n    prev = f(x)\n", "prev", False),
        ("while True:\n    try:\n        h\n    except NameError:\n        h = f()\n    loss = h.sum()\n", "h", False),
        ("for x in xs:\n    for b in x:\n        z = b\n    loss = z.sum()\n", "z", False),
        ("for x in xs:\n    h = f(x)\n    h += 1\n", "h", True),
    ],
)
def test_a_name_is_fresh_only_where_bound_before_every_read(source, name, fresh):
    assert (name in _fresh(source)) is fresh


@pytest.mark.parametrize(
    "value, free",
    [
        ("torch.utils.data.TensorDataset(feats, y)", False),
        ("torch.utils.data.DataLoader(ds, batch_size=4)", False),
        ("torch.utils.data.TensorDataset(torch.randn(4, 3))", True),
        ("nn.Linear(16, 16)", True),
        ("nn.Linear(d, d)", False),  # (round 4: `d` is proven only where a caller resolves names)
        ("torch.nn.Parameter(x @ w)", True),
        ("nn.CrossEntropyLoss(weight=w)", False),
        ("nn.CrossEntropyLoss(reduction='sum')", True),
        ("torch.optim.SGD(model.parameters(), lr=0.1)", True),
        ("torch.optim.SGD(model.parameters(), lr=lr)", False),  # (round 4: `lr` may be a tensor it keeps)
        ("torch.distributions.Normal(mu, 1.0)", False),
        ("{h: 'feats'}", False),
        ("{'feats': 1}", True),
        ("lambda x: x * 2", True),
        ("lambda x, h=h: x * h", False),
    ],
)
def test_graph_free_classes_and_dict_keys(value, free):
    assert graph_free(cst.parse_expression(value)) is free


_STEP = """import torch
w = torch.randn(3, requires_grad=True)


def step(model):
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    {line}
"""


@pytest.mark.parametrize(
    "line, reason",
    [
        ("raise ValueError('bad loss', loss)", "`raise ValueError('bad loss', loss)` (line 8) may carry"),
        ("raise model.error", "`raise model.error` (line 8) may carry"),
        ("raise StopIteration", None),
        ("assert loss.item() < 1e9, f'{loss.item()}'", None),
        ("model.train(False)", None),
        ("model.train(loss)", "`model.train()` (line 8) is not proven"),
    ],
)
def test_gf005_exceptions_and_module_methods(line, reason):
    (finding,) = lint_bytes(_STEP.format(line=line).encode(), "t.py", LintOptions(("GF005",))).findings
    if reason is None:
        assert finding.fixable
    else:
        assert not finding.fixable and reason in finding.fix.unsafe_reason
