"""Review round 6 (reviewer U): merges of backward passes and GF005, what keeps a tensor of the graph.

Causes:
- `backward.value_like` trusted a builtin by its text: `float`, `str`, ... defined or rebound in
  the file (`def float(t): return t`) hand the tensor on (`return float(l1)`, GF005's
  `keep.append(float(loss))`).
- An augmented assignment to a name from outside the call (`keep += [l1]` on a parameter) extends
  the caller's object in place (`_graph_leaves`; GF005's `_fresh` is now `backward.fresh_binding`,
  shared).
- Calls harmless between two passes that still keep their arguments: a logging call given a
  tensor (`log.info("%s", l1)`: the record's `args`, kept by a `MemoryHandler`) and a `key=`
  function run on each item (`sorted([l1], key=kept.append)`): `backward.hands_on_arguments`,
  shared by `_graph_leaves` and GF005.
- A special method that fills a container from outside (`kept.append(other)` in `__radd__`) runs at
  `l1 + acc` (`facts._changes_state` saw stores, `+=` and `setattr`, not container methods).
- Backward merges did not check `__torch_function__` or tensor subclasses of the file (round 5
  added them to evaluation merges): `Tensor.backward` and the merged sum's `+` are torch calls
  (`backward.torch_hook_reasons`, shared with `MergeSafety`).
- A `.grad` tensor bound by `:=` or a `match` capture: `gradient_stores` did not follow the name
  into `G.append(g)`, and a read between the passes was not seen (`assigned_values` is None for
  such names: `between._other_bindings`); a list repeated or concatenated (`[w.grad] * 1`) holds it.
- A gradient hook registered by a computed name through other getters than round 5's:
  `h.__getattribute__(name)`, `inspect.getattr_static`, a class's namespace (`Tensor.__dict__[name]`,
  `vars(T)[name]`), a getter renamed (`ga = getattr`), or a string built to spell `register_...`
  anywhere (`computed_method_calls`).
- Module-level code: a class-body alias of a method (`__call__ = forward`) made `probe(l1)` run a
  method that backpropagates (`Backpropagators`: the alias binds the method under that name too); a
  property made by a call in the class body (`again = property(run)`) runs where `fin.again` is read.
- A torch optimizer built in the function was taken to keep nothing: its param groups keep every
  key (`{"params": [w], "extra": l1}`) and its hyperparameters may be tensors; a global step hook
  reaches them (`backward.optimizer_keeps_nothing`, shared with GF005).
- A function that backpropagates, bound to another name by `:=`, a conditional or `or`
  (`cb = finish if ok else None`; `cb()` later): `Backpropagators.uses` saw plain values only.
- `statements.may_catch` trusted `with torch.enable_grad():` where the file patches torch through
  another name (`import torch as T; T.enable_grad = ...`), `sys.modules`, or what a call returns.
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.backward import Backpropagators, computed_method_calls
from gradfix.analysis.between import gradient_stores, holds_gradient
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from tests.test_review_reproducers import ALL, check_case

CASES = sorted((Path(__file__).parent / "review_round6").glob("U_*.py"))

EXPECTED = {
    "U_01_gf003_augmented_assignment_on_parameter": ("GF003", "`keep +=` (line 13) may change an object from outside the call in place"),
    "U_02_gf003_float_rebound_in_file": ("GF003", "`return float(l1)` (line 17) may hand a tensor of the graph to the caller"),
    "U_03_gf005_float_rebound_keeps_loss": ("GF005", "`keep.append()` (line 13) stores a tensor in a container"),
    "U_04_gf003_torch_function_logs_backward": ("GF003", "`__torch_function__` (line 10) may run code of the file at each torch call"),
    "U_05_gf003_tensor_subclass_overrides_add": ("GF003", "`Logged` (line 7) may run code of the file at each torch call"),
    "U_06_gf003_grad_walrus_stored": ("GF003", "line 12 stores a `.grad` tensor (`G.append(...)`)"),
    "U_07_gf003_grad_match_capture_stored": ("GF003", "line 13 stores a `.grad` tensor (`G.append(...)`)"),
    "U_08_gf003_grad_sequence_repetition_stored": ("GF003", "line 11 stores a `.grad` tensor (`G.extend(...)`)"),
    "U_09_gf003_grad_walrus_read_between": None,
    "U_10_gf003_grad_match_capture_read_between": None,
    "U_11_gf003_sorted_key_keeps_loss": ("GF003", "`sorted()` (line 14) is not proven to keep no tensor of the graph"),
    "U_12_gf003_logging_record_keeps_loss": ("GF003", "`log.info()` (line 20) is not proven to keep no tensor of the graph"),
    "U_13_gf003_radd_keeps_loss": ("GF003", "`__radd__` (line 10) runs without a call by name"),
    "U_14_gf003_hook_by_getattribute": ("GF003", "`h.__getattribute__('register_' + 'hook')` (line 15) calls a method by a computed name"),
    "U_15_gf003_hook_from_class_dict": ("GF003", "`torch.Tensor.__dict__['register_' + 'hook']` (line 15) calls a method by a computed name"),
    "U_16_gf003_hook_by_getattr_static": ("GF003", "`inspect.getattr_static(h, 'register_' + 'hook')` (line 16) calls a method"),
    "U_17_gf003_main_call_bound_to_backprop_method": ("GF003", "`forward` (line 9) may backpropagate when Python runs it"),
    "U_18_gf003_context_patched_through_alias": ("GF003", "`step` is called where an exception may be caught (line 20)"),
    "U_20_gf005_main_property_made_by_call": None,
    "U_21_gf005_main_function_bound_by_walrus": None,
    "U_22_gf005_main_function_bound_by_conditional": None,
    "U_19_gf003_param_group_keeps_loss": ("GF003", "`torch.optim.SGD()` (line 23) is not proven to keep no tensor of the graph"),
}

# Programs that leave process state behind: run in a process of their own.
APART = {
    "U_19_gf003_param_group_keeps_loss",  # a global optimizer step hook registered
    "U_18_gf003_context_patched_through_alias",  # torch.enable_grad patched
    "U_12_gf003_logging_record_keeps_loss",  # a handler added to a named logger
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


# -- focused checks ------------------------------------------------------------------------------

_STEP = """import logging
import torch
w = torch.randn(3, requires_grad=True)
kept = []
log = logging.getLogger("t")
{extra}

def other():
    v = (w * 3).sin().sum()
    v.backward()


def step(keep):
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
{tail}"""


def _merge(tail, extra=""):
    findings = lint_bytes(_STEP.format(tail=tail, extra=extra).encode(), "train.py", LintOptions(ALL)).findings
    assert [f.code for f in findings] == ["GF003"]
    return findings[0].fix.unsafe_reason or None


def test_what_keeps_a_tensor_beyond_the_call():
    # Kept nothing: values, a local list, a builtin key, a log of values.
    for tail in (
        "    return float(l1)\n",
        "    total = []\n    total += [l1]\n",
        "    n = 0\n    n += l1.item()\n",
        "    print(sorted([l1.item()], key=abs))\n",
        "    log.info('loss %s', l1.item())\n",
        "    log.info(f'loss {l1}')\n",
        "    opt = torch.optim.SGD([w], lr=0.1)\n    opt.step()\n",
        "    opt = torch.optim.SGD([{'params': [w], 'lr': l1.item()}])\n    opt.step()\n",
    ):
        assert _merge(tail) is None, tail
    kept = {
        "    keep += [l1]\n": "`keep +=` (line 18)",
        "    alias = kept\n    alias += [l1]\n": "`alias +=` (line 19)",
        "    sorted([l1], key=kept.append)\n": "`sorted()` (line 18)",
        "    max([l1], key=lambda t: t)\n": "",
        "    log.warning('loss %s', l1)\n": "`log.warning()` (line 18)",
        "    opt = torch.optim.SGD([{'params': [w], 'extra': l1}])\n": "`torch.optim.SGD()` (line 18)",
        "    opt = torch.optim.SGD([w], lr=l1)\n": "`torch.optim.SGD()` (line 18)",
    }
    for tail, reason in kept.items():
        text = _merge(tail)
        assert text is not None and reason in text and "`v.backward()` (line 10) backpropagates outside `step`" in text, (tail, text)
    # A builtin of the file's own.
    assert "`return float(l1)` (line 18)" in (_merge("    return float(l1)\n", extra="float = lambda t: t") or "")
    assert "`return str(l1)` (line 18)" in (_merge("    return str(l1)\n", extra="from numpy import *") or "")


def test_dunder_filling_a_container():
    dunder = "class Acc:\n    def __radd__(self, x):\n        {body}\n        return self\n"
    assert "`__radd__`" in (_merge("    print(l1 + 1)\n", extra=dunder.format(body="kept.append(x)")) or "")
    # A container the method makes itself is no state.
    assert _merge("    print(l1 + 1)\n", extra=dunder.format(body="out = []\n        out.append(x)")) is None


def test_backward_merges_check_torch_hooks():
    assert "`Logged` (line 6) may run code of the file" in (_merge("", extra="class Logged(torch.Tensor):\n    pass\n") or "")


def test_holds_gradient_sequences():
    held = ["[w.grad] * 2", "[w.grad] + G", "2 * [w.grad]", "(w.grad,) + ()"]
    fresh = ["w.grad * 2", "w.grad + 1", "[w.grad.norm()] * 2"]
    assert [e for e in held if not holds_gradient(cst.parse_expression(e))] == []
    assert [e for e in fresh if holds_gradient(cst.parse_expression(e))] == []


def test_gradient_stores_follow_walrus_and_match():
    module = cst.parse_module(
        "if (g := w.grad) is not None:\n    G.append(g)\nmatch w.grad:\n    case h:\n        H.append(h)\n"
        "if (n := w.grad.norm()) > 0:\n    N.append(n)\n"
    )
    assert [module.code_for_node(n) for n in gradient_stores(module)] == ["G.append(g)", "H.append(h)"]


def test_computed_method_calls_other_getters():
    source = """h.__getattribute__('register_' + 'hook')(f)
object.__getattribute__(h, name)(f)
inspect.getattr_static(h, k)(h, f)
torch.Tensor.__dict__[k](h, f)
vars(torch.Tensor)['register_hook'](h, f)
ga = getattr
n = 'register_' + kind
print(f'loss {x}')
class A:
    def __getattribute__(self, name):
        return 1
h.__getattribute__('shape')
"""
    module = cst.parse_module(source)
    assert [module.code_for_node(c) for c in computed_method_calls(module)] == [
        "h.__getattribute__('register_' + 'hook')", "object.__getattribute__(h, name)", "inspect.getattr_static(h, k)",
        "torch.Tensor.__dict__[k]", "getattr", "'register_' + kind",
    ]


def test_class_body_alias_of_a_method():
    source = "import torch\nclass P:\n    def forward(self, l):\n        l.backward()\n    __call__ = forward\n    again = forward\n"
    found = Backpropagators(cst.parse_module(source))
    assert [d.name.value for d in found.implicit_methods] == ["forward"]
    assert found.suspect(cst.parse_expression("p.again"))
    made = "import torch\nclass F:\n    def run(self):\n        l.backward()\n    again = property(run)\n    other = run\n"
    found = Backpropagators(cst.parse_module(made))
    assert [d.name.value for d in found.implicit_methods] == ["run"]


@pytest.mark.parametrize(
    "patch, caught",
    [
        ("", False),
        ("import torch as T\nT.enable_grad = f\n", True),
        ("import torch.autograd as ag\nag.grad_mode.enable_grad = f\n", True),
        ("import sys\nsys.modules['torch'].enable_grad = f\n", True),
        ("import importlib\nimportlib.import_module('torch').enable_grad = f\n", True),
        ("import numpy as np\nnp.x = f\n", False),
    ],
)
def test_passing_context_patched_elsewhere(patch, caught):
    from gradfix.analysis.statements import may_catch

    module = cst.parse_module("import torch\n" + patch + "with torch.enable_grad():\n    pass\n")
    assert may_catch(module.body[-1], module) is caught
