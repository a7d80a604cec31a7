"""Review round 15 (reviewer Y): merges of backward passes, holes left after round 14 in the proof
of what a library base's own code runs on an instance of a class of the file
(`FileFacts._base_self_calls`).

Causes:
- Round 14 proved torch's `Optimizer` base calls no plain-named method of a subclass from a
  harmless call, and round 12 listed the methods torch's `Module` calls on `self`
  (`_MODULE_SELF_CALLS`); but the bases' special methods also read attributes of the instance by
  plain names, and a property of the file by such a name runs its getter at the read:
  `print(opt)` between the passes runs `Optimizer.__repr__`, which reads `self.param_groups`
  (Y_01); `print(net)` runs `Module.__repr__`, which reads `self._modules` (Y_02). Now the names the
  special methods of these bases read or call on `self` (from torch 2.x's source: `__repr__`,
  `__dir__`, `__setattr__`, `__delattr__`, `__getstate__`, `__setstate__`) count as names the base
  calls (`_LIBRARY_SELF_READS` for the optimizer, the module's in `_MODULE_SELF_CALLS`): a method
  or a property of the file by one of them that changes state runs with no call by name
  (`implicit_dunders`).

Near miss that stays safe and exact: an optimizer and a module of the file with properties that
change state under names the bases' special methods do not read, printed between the passes (Y_03).
"""
from pathlib import Path

import libcst as cst
import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round15").glob("Y_*.py"))

_RUNS = "runs without a call by name"
EXPECTED = {
    "Y_01_gf003_optimizer_repr_reads_param_groups_property": ("GF003", f"`param_groups` (line 15) {_RUNS}"),
    "Y_02_gf003_module_repr_reads_modules_property": ("GF003", f"`_modules` (line 12) {_RUNS}"),
    # Near misses: a safe fix, executed exact.
    "Y_03_gf003_optimizer_module_plain_properties_near_miss": ("GF003", None),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _facts(source: str):
    from gradfix.analysis.facts import FileFacts
    from gradfix.analysis.positions import node_maps

    module = cst.parse_module(source)
    return FileFacts(module, node_maps(module))


@pytest.mark.parametrize(
    "base, names",
    [
        ("torch.optim.Optimizer", {"param_groups", "defaults", "state", "_patch_step_function"}),
        ("Optimizer", {"param_groups"}),
        ("nn.Module", {"_modules", "_parameters", "_buffers", "extra_repr"}),
    ],
)
def test_base_special_methods_reads_count_as_calls(base, names):
    facts = _facts(
        "import torch\nfrom torch import nn\nfrom torch.optim import Optimizer\n"
        f"class K({base}):\n    pass\n"
    )
    calls = facts._base_self_calls(facts.class_names["K"][0], set())
    assert calls is not None and names <= calls and "lr" not in calls


def test_function_and_dataset_bases_read_nothing():
    facts = _facts(
        "import torch\nfrom torch.utils.data import Dataset\n"
        "class F(torch.autograd.Function):\n    pass\nclass D(Dataset):\n    pass\n"
    )
    assert facts._base_self_calls(facts.class_names["F"][0], set()) == frozenset()
    assert facts._base_self_calls(facts.class_names["D"][0], set()) == frozenset()
