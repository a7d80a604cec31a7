"""Review round 5 (reviewer Q): merges of backward passes and GF005, what runs later or elsewhere.

Causes:
- `self.X` proven a torch object (d28c193, `Backpropagators._torch_attribute`) by its text only: a
  class of the file named `nn`, a subclass patched into `torch.optim`, a store into `X` by a tuple
  target or `object.__setattr__`, torch's `step` patched with a method of the file.
- Code of the file outside the function that backpropagates, reached after the merge: a module's
  `forward` run by `self.probe(l1)`, a hook registered in another function and run by torch, a
  caller backpropagating a loss the function kept or returned (`outside_backward_reasons`).
- Module-level code: a `forward` that backpropagates, run by `probe(loss)` (a method of a class with
  a base, `Backpropagators.based_methods`).
- A name bound to a way to backpropagate in a class body, called as a method (`self.again(l1)`).
- Grad mode: a switch handed on (`map(torch.set_grad_enabled, [False])`) or named by a string
  (`getattr(torch, "set_grad_enabled")`); a switch inside a lambda in no name (an optimizer hook);
  a caller of the function inside a lambda (bound to a name, a default argument, an item) called
  under `with torch.no_grad():` (`_lazy_call`; lambda bodies were skipped by `nodes_within`).
- A `.grad` tensor kept by other spellings: `G += [w.grad]`, `getattr(w, "grad")`,
  `attrgetter("grad")(w)`, a torch function's view (`torch.narrow(w.grad, ...)`).
- A gradient hook registered by a computed method name (`getattr(h, "register_" + "hook")(fn)`).
- A property of the file that backpropagates, run where its attribute is read (`fin.again`).
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.backward import Backpropagators, computed_method_calls
from gradfix.analysis.between import gradient_stores, holds_gradient
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from tests.test_review_reproducers import ALL, check_case

CASES = sorted((Path(__file__).parent / "review_round5").glob("Q_*.py"))

EXPECTED = {
    "Q_01_gf003_class_named_nn_constructor": ("GF003", "a later `self.opt.step()` (line 33)"),
    "Q_02_gf003_subclass_patched_into_torch_optim": ("GF003", "a later `self.opt.step()` (line 29)"),
    "Q_03_gf003_opt_stored_by_tuple_target": ("GF003", "a later `self.opt.step()` (line 26)"),
    "Q_04_gf003_opt_stored_by_object_setattr": ("GF003", "a later `self.opt.step()` (line 26)"),
    "Q_05_gf003_torch_step_patched": ("GF003", "a later `self.opt.step()` (line 25)"),
    "Q_06_gf003_module_forward_backprops": ("GF003", "`loss.backward()` (line 11) backpropagates outside `train`"),
    "Q_07_gf003_hook_registered_in_setup": ("GF003", "`self.keep.backward()` (line 15) backpropagates outside `train_step`"),
    "Q_08_gf003_forward_hook_registered_elsewhere": ("GF003", "`keep[0].backward()` (line 11) backpropagates outside `train_step`"),
    "Q_09_gf003_caller_backprops_kept_loss": ("GF003", "`keep.append()` (line 12) is not proven to keep no tensor"),
    "Q_10_gf003_returned_loss_backpropagated": ("GF003", "`return l1` (line 13) may hand a tensor of the graph to the caller"),
    "Q_11_gf005_main_module_forward": None,
    "Q_12_gf003_main_module_forward": ("GF003", "`forward` (line 10) of a class with a base may backpropagate"),
    "Q_13_gf003_class_alias_called_as_method": ("GF003", "a later `self.again()` (line 17)"),
    "Q_14_gf003_switch_handed_to_map": ("GF003", "`torch.set_grad_enabled`, handed on or named by a string, (line 17)"),
    "Q_15_gf003_switch_by_getattr_string": ("GF003", "`'set_grad_enabled'`, handed on or named by a string, (line 17)"),
    "Q_16_gf003_caller_lambda_under_no_grad": ("GF003", "`step` is handed on by name (line 6) in the file, and `with torch.no_grad():` (line 18)"),
    "Q_17_gf003_default_lambda_under_no_grad": ("GF003", "`step` is handed on by name (line 6) in the file, and `with torch.no_grad():` (line 19)"),
    "Q_18_gf003_lambda_in_list_under_no_grad": ("GF003", "`step` is handed on by name (line 17) in the file, and `with torch.no_grad():` (line 18)"),
    "Q_19_gf003_hook_lambda_switches_grad_off": ("GF003", "`torch.set_grad_enabled(...)` (line 7)"),
    "Q_20_gf003_grad_kept_by_augmented_assignment": ("GF003", "line 13 stores a `.grad` tensor (`[w.grad]`)"),
    "Q_21_gf003_grad_kept_through_getattr": ("GF003", "line 12 stores a `.grad` tensor (`G.append(...)`)"),
    "Q_22_gf003_grad_kept_through_attrgetter": ("GF003", "line 12 stores a `.grad` tensor (`G.append(...)`)"),
    "Q_23_gf003_grad_view_by_torch_function": ("GF003", "line 12 stores a `.grad` tensor (`G.append(...)`)"),
    "Q_24_gf003_hook_by_computed_name": ("GF003", "`getattr(h, 'register_' + 'hook')` (line 15) calls a method by a computed name"),
    "Q_25_gf005_main_property_read_backprops": None,
    "Q_26_gf005_main_property_in_if_backprops": None,
}

# Programs that leave process state behind (torch patched): run in a process of their own.
APART = {
    "Q_02_gf003_subclass_patched_into_torch_optim",
    "Q_05_gf003_torch_step_patched",
    "Q_14_gf003_switch_handed_to_map",  # gradient recording left off
    "Q_15_gf003_switch_by_getattr_string",
    "Q_19_gf003_hook_lambda_switches_grad_off",
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


# -- focused checks ------------------------------------------------------------------------------

_TRAINER = """import torch
{imports}
w = torch.randn(3, requires_grad=True)


class Trainer:
    def __init__(self):
        self.opt = {opt}
{init}
    def step(self):
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        self.opt.step()
{extra}"""


def _gf003(imports="", opt="torch.optim.SGD([w], lr=0.1)", init="", extra=""):
    source = _TRAINER.format(imports=imports, opt=opt, init=init, extra=extra)
    findings = lint_bytes(source.encode(), "train.py", LintOptions(ALL)).findings
    assert [f.code for f in findings] == ["GF003"]
    return findings[0].fix


@pytest.mark.parametrize(
    "imports, opt",
    [
        ("", "torch.optim.SGD([w], lr=0.1)"),
        ("from torch import optim", "optim.SGD([w], lr=0.1)"),
        ("import torch.optim as optim", "optim.Adam([w])"),
        ("from torch import nn", "nn.Linear(3, 1)"),
        ("", "torch.amp.GradScaler()"),
    ],
)
def test_a_torch_object_keeps_the_merge(imports, opt):
    fix = _gf003(imports, opt)
    assert fix.safe, fix.unsafe_reason


FIN = "\n\nclass Fin:\n    def step(self):\n        print(w)\n"


@pytest.mark.parametrize(
    "imports, init, extra",
    [
        ("", "        for self.opt in [Fin()]:\n            pass\n", FIN),
        ("import contextlib", "        with contextlib.nullcontext(Fin()) as self.opt:\n            pass\n", FIN),
        ("", "        self.opt.step = Fin().step\n", FIN),
        ("", "", FIN + "\n\nclass Other:\n    opt = Fin()\n"),  # a class attribute of that name
        ("", "", FIN + "\n\nclass Other:\n    @property\n    def opt(self):\n        return Fin()\n"),
        ("", "", FIN + "\n\nimport torch.optim as o\no.SGD = Fin\n"),  # torch patched through another name
        ("", "", FIN + "\n\nglobals()['torch'] = None\n"),  # a name bound by a string
        ("import optim", "", FIN),  # `optim` is not torch's
    ],
)
def test_other_stores_make_the_receiver_unproven(imports, init, extra):
    opt = "optim.SGD([w], lr=0.1)" if imports == "import optim" else "torch.optim.SGD([w], lr=0.1)"
    fix = _gf003(imports, opt, init, extra)
    assert not fix.safe
    assert "a later `self.opt.step()`" in fix.unsafe_reason


def _suspect(source, expr):
    module = cst.parse_module(source)
    return Backpropagators(module).suspect(cst.parse_expression(expr))


def test_a_class_body_alias_counts_as_a_method():
    source = "import torch\nclass T:\n    again = staticmethod(torch.Tensor.backward)\n"
    assert _suspect(source, "self.again")
    assert _suspect(source, "t.again")
    assert not _suspect(source, "self.other")


_TWO = """import torch
w = torch.randn(3, requires_grad=True)
keep = []


def other():
    v = (w * 3).sin().sum()
    v.backward()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
{tail}"""


def _merge_reason(tail):
    findings = lint_bytes(_TWO.format(tail=tail).encode(), "train.py", LintOptions(ALL)).findings
    assert [f.code for f in findings] == ["GF003"]
    return findings[0].fix.unsafe_reason or None


def test_backward_elsewhere_counts_only_where_the_graph_may_leave():
    # Nothing of the graph leaves `step`: `other` backpropagates through a graph of its own.
    assert _merge_reason("    print(l1.item())\n    return float(l2)\n") is None
    leaves = {
        "    return l1\n": "`return l1` (line 16)",
        "    keep.append(l1)\n": "`keep.append()` (line 16)",
        "    keep[0] = l1\n": "`keep[0]` (line 16)",
        "    global keep\n    keep = l1\n": "`global keep` (line 16)",
        "    yield l1\n": "`yield l1` (line 16)",
        "    def f():\n        return l1\n    print(f)\n": "",  # a closure (or the calls it makes unproven)
    }
    for tail, reason in leaves.items():
        text = _merge_reason(tail)
        assert text is not None and reason in text and "`v.backward()` (line 8) backpropagates outside `step`" in text, (tail, text)


def test_module_level_forward_of_a_plain_class_is_placed():
    # A method of a class without a base runs where it is called by its name: placed.
    source = """import torch
w = torch.randn(3, requires_grad=True)


class Probe:
    def forward(self, loss):
        loss.backward()


if __name__ == "__main__":
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    print(w.grad.tolist())
"""
    findings = lint_bytes(source.encode(), "train.py", LintOptions(ALL)).findings
    assert [(f.code, f.fix.safe) for f in findings] == [("GF003", True)]
    based = source.replace("class Probe:", "class Probe(torch.nn.Module):")
    findings = lint_bytes(based.encode(), "train.py", LintOptions(ALL)).findings
    assert [(f.code, f.fix.safe) for f in findings] == [("GF003", False)]


_GRAD = """import torch
w = torch.randn(3, requires_grad=True)
{extra}

def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
"""


def _grad_reason(extra):
    findings = lint_bytes(_GRAD.format(extra=extra).encode(), "train.py", LintOptions(ALL)).findings
    assert [f.code for f in findings] == ["GF003"]
    return findings[0].fix.unsafe_reason or None


def test_grad_mode_switches_placed_and_not():
    # Placed: entered, decorating, an alias by name, recording switched on.
    assert _grad_reason("def ev():\n    with torch.no_grad():\n        print(w)\n") is None
    assert _grad_reason("@torch.no_grad()\ndef ev():\n    print(w)\n") is None
    assert _grad_reason("from torch import no_grad\non = lambda: torch.set_grad_enabled(True)\n") is None
    # (In a list, a lambda is handed on since round 12: whatever it does, a merge is unsafe.)
    assert "is handed to code outside the file" in _grad_reason("from torch import no_grad\ncb = [lambda: torch.set_grad_enabled(True)]\n")
    # Not placed.
    for extra in (
        "hooks = [torch.no_grad]",
        "import functools\nf = [functools.partial(torch.set_grad_enabled, False)]",
        "def ev(enter=torch.no_grad().__enter__):\n    enter()",
        "x = getattr(torch, 'inference_mode')",
        "g = (step() for _ in range(1))\nwith torch.no_grad():\n    next(g)",
        "def gen():\n    yield step()\nwith torch.no_grad():\n    next(gen())",
    ):
        assert "may turn gradient recording off" in (_grad_reason(extra) or ""), extra


def test_holds_gradient_other_spellings():
    held = ["getattr(w, 'grad')", "operator.attrgetter('grad')(w)", "w.__getattribute__('_grad')", "torch.narrow(w.grad, 0, 0, 2)",
            "torch.Tensor.view(w.grad, -1)", "torch.select(w.grad, 0, 1)"]
    fresh = ["getattr(w, 'shape')", "torch.add(w.grad, 1)", "w.grad.norm()", "x.mul(w.grad)"]
    assert [e for e in held if not holds_gradient(cst.parse_expression(e))] == []
    assert [e for e in fresh if holds_gradient(cst.parse_expression(e))] == []


def test_gradient_stores_augmented_assignment():
    module = cst.parse_module("G = []\nG += [w.grad]\nn = 0\nn += float(w.grad.sum())\n")
    assert [module.code_for_node(n) for n in gradient_stores(module)] == ["[w.grad]"]


def test_computed_method_calls():
    source = """getattr(h, 'register_' + 'hook')(f)
getattr(self, f'layer{i}')(x)
getattr(args, k)
g = getattr(m, name)
operator.methodcaller(n)
getattr(h, f'register_{k}')(f)
getattr(h, 'lr')
"""
    module = cst.parse_module(source)
    assert [module.code_for_node(c) for c in computed_method_calls(module)] == [
        "getattr(h, 'register_' + 'hook')", "getattr(m, name)", "operator.methodcaller(n)", "getattr(h, f'register_{k}')",
    ]
