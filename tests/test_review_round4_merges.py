"""Review round 4 (reviewer L, findings 04-17): gaps in the merge and GF005 fixes of round 3.

Causes:
- Code that runs later than its line (GF005 in `__main__`, merges): a dunder method of the file
  that backpropagates (`__call__`, `__repr__`, `__iter__`: Python calls it without its name); a
  generator function that backpropagates (its body runs at `next(g)` or `g.close()`, not at
  its call); a backpropagating method of the file called on any receiver (`make().finish()`,
  `Fin.finish()`, `fins[0].finish()`), not only `self` or a name bound to `Cls()`.
- Saved-tensor hooks (`torch.autograd.graph.saved_tensors_hooks(pack, unpack)`): the unpack hook
  runs once per pass per saved tensor.
- An activation checkpoint reached through `importlib.import_module("torch.utils.checkpoint")`
  and `ckpt.checkpoint`.
- Grad mode beyond the function: a caller in the file under `with torch.no_grad():` or
  `@torch.no_grad()`, `torch.set_grad_enabled(False)` at module level.
- A `.grad` tensor stored elsewhere than in a plain local name (`G["w"] = w.grad`, `box.g =
  w.grad`) and read between the passes.
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.between import gradient_stores, holds_gradient
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from tests.test_review_reproducers import ALL, check_case

CASES = sorted((Path(__file__).parent / "review_round4").glob("M_*.py"))

EXPECTED = {
    "M_04_gf005_main_callable_instance_backprops": None,
    "M_05_gf005_main_repr_backprops_on_print": None,
    "M_06_gf005_main_generator_finally_close": None,
    "M_07_gf005_main_factory_instance_method": None,
    "M_08_gf005_main_iter_backprops": None,
    "M_09_gf003_saved_tensors_hooks_random_unpack": ("GF003", "saved-tensor hooks"),
    "M_10_gf003_caller_with_no_grad": ("GF003", "`adapt` is called in the file, and `with torch.no_grad():`"),
    "M_11_gf003_module_set_grad_enabled_false": ("GF003", "`torch.set_grad_enabled(...)` (line 6)"),
    "M_12_gf003_caller_decorated_no_grad": ("GF003", "`@torch.no_grad()`"),
    "M_13_gf003_grad_stored_in_global_dict": ("GF003", "stores a `.grad` tensor"),
    "M_14_gf003_grad_stored_on_object_attribute": ("GF003", "stores a `.grad` tensor"),
    "M_15_gf005_main_staticmethod_on_class_backprops": None,
    "M_16_gf005_main_instance_in_list_backprops": None,
    "M_17_gf003_checkpoint_via_importlib_attribute": ("GF003", "activation checkpoint"),
}


# Programs that leave process state behind: run in a process of their own.
APART = {
    "M_11_gf003_module_set_grad_enabled_false",  # gradient recording left off
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


# -- focused checks of the helpers whose behaviour changed ----------------------------------




def _stores(source):
    module = cst.parse_module(source)
    return [module.code_for_node(n) for n in gradient_stores(module)]


def test_holds_gradient_views_and_containers_not_new_tensors():
    held = ["w.grad", "w.grad.data", "w.grad.detach()", "w.grad[0]", "w.grad.view(-1)", "[p.grad for p in ps]", "{'w': w.grad}", "w.grad.to(d)"]
    fresh = ["w.grad.norm()", "w.grad.clone()", "w.grad * 2", "torch.autograd.grad(l, w)", "float(w.grad.sum())", "w.grad.shape"]
    assert all(holds_gradient(cst.parse_expression(e)) for e in held)
    assert not any(holds_gradient(cst.parse_expression(e)) for e in fresh)


def test_gradient_stores_outside_plain_local_names():
    assert _stores("G.update(w=w.grad)\n") == ["G.update(w=w.grad)"]
    assert _stores("def f():\n    global G\n    G = w.grad.detach()\n") == ["w.grad.detach()"]
    assert _stores("g = w.grad\nbox.g = g\n") == ["g"]
    assert _stores("def keep():\n    return w.grad\n") == ["return w.grad"]
    # A plain local name is `names_bound_to_gradients`' to follow; new tensors are no stores.
    assert _stores("g = w.grad\nprint(g, float(g.norm()))\nG['n'] = w.grad.norm()\nG['c'] = w.grad.clone()\n") == []


_MERGE = """import torch
w = torch.randn(3, requires_grad=True)
{extra}
def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
"""


def _reason(extra):
    findings = lint_bytes(_MERGE.format(extra=extra).encode(), "train.py", LintOptions(ALL)).findings
    assert [f.code for f in findings] == ["GF003"]
    return findings[0].fix.unsafe_reason or None


def test_reach_kept_without_the_causes():
    assert _reason("") is None
    assert _reason("torch.set_grad_enabled(True)") is None
    assert _reason("def evaluate():\n    with torch.no_grad():\n        print(w)") is None
    assert _reason("G = {}\nG['n'] = w.grad.norm()") is None
    assert _reason("class Fin:\n    def finish(self):\n        print(w)") is None


def test_causes_in_other_spellings():
    assert "may turn gradient recording off" in _reason("off = torch.set_grad_enabled\noff(False)")
    assert "may turn gradient recording off" in _reason("def run():\n    step()\nwith torch.inference_mode():\n    run()")
    assert "saved-tensor hooks" in _reason("torch.autograd.graph.register_saved_tensors_hooks = None")
    assert "activation checkpoint" in _reason("import importlib\nck = importlib.import_module('torch.utils.checkpoint').checkpoint")
    assert "stores a `.grad` tensor" in _reason("class Box:\n    pass\nBox.g = w.grad")


def test_gf005_a_method_of_the_file_on_a_class_alias_runs_later():
    source = """import torch
w = torch.randn(3, requires_grad=True)
class Fin:
    def finish(self):
        loss.backward()
if __name__ == "__main__":
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    f = Fin
    f().finish()
"""
    assert lint_bytes(source.encode(), "train.py", LintOptions(ALL)).findings == []
    plain = source.replace("    f = Fin\n    f().finish()\n", "    print(w)\n")
    assert [f.code for f in lint_bytes(plain.encode(), "train.py", LintOptions(ALL)).findings] == ["GF005"]
