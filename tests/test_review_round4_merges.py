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

import pytest

from tests.test_review_reproducers import check_case

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
