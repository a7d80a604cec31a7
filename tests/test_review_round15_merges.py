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

- A class reached by no name of it (round 14: `_CLASS_GRAPH_ATTRIBUTES`, `_class_parameter_reads`)
  through an attribute that gives the class an object was bound to or made with: a classmethod's
  `__self__` (`sys.setprofile(Prof.make.__self__)`, Y_04), a `super` object's `__thisclass__` (Y_06)
  or `__self_class__`, a descriptor's `__objclass__`; or through the bare name `__class__` in a
  method, the cell Python binds to the class (`sys.setprofile(__class__)`, Y_05). Now those
  attributes walk the class graph, and a bare `__class__` in a method reads a class parameter.
- A module-level def read as an attribute of a path from a trusted module was taken for no def
  of the file (round 12: `torch.nn.init.zeros_`), but an item or a call's result on that path may
  be any module, the file's own: `sys.setprofile(sys.modules[__name__].prof)` (Y_08). Now only a
  chain of attributes from a trusted module is kept off the file's defs (`_attribute_chain`).
- GF005 (`_loss_from_caller`, round 14) followed a handed-in loss through bindings whose value is an
  access path, and through `get`/`pop`/`getattr`: a loss selected from the parameter by a form that
  gives an item as it is was taken for one the function built, with a safe fix where the caller is
  in another file: `for _, loss in enumerate(losses)`, `for loss in losses.values()`, `zip(losses,
  ...)`, `loss = losses[0] if losses else None`, `losses and losses[0]`, `list(losses)[0]`,
  `dict(losses)["d"]`, a comprehension over `losses.items()`, `(losses,)[0][0]`, a `match` capture
  (`case [loss]:`). Now `_held_in` follows conditionals, `and`/`or`, subscripts and attributes of a
  computed holder, displays, comprehensions' iterables, selecting builtins (`_SELECTING_BUILTINS`)
  and methods (`_SELECTING_METHODS`); `_values_bound` reads `match` captures. (As in round 14, the
  tests keep a caller in the file, which gives an unsafe fix on its own, and check the reason.)

Near misses that stay safe and exact: an optimizer and a module of the file with properties that
change state under names the bases' special methods do not read, printed between the passes (Y_03);
the three class-graph reads used only as attribute receivers (`Prof.make.__self__.__name__`, Y_07);
defs of the file named as attributes read through chains of attributes from torch (Y_09);
a GF005 loss the function computes from an input selected by a conditional.
"""
from pathlib import Path

import libcst as cst
import pytest

from tests.test_gf005_caller_loss import _PROGRAM
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round15").glob("Y_*.py"))

_RUNS = "runs without a call by name"
_HANDED = "is handed to code outside the file, which may run it between the passes"
EXPECTED = {
    "Y_01_gf003_optimizer_repr_reads_param_groups_property": ("GF003", f"`param_groups` (line 15) {_RUNS}"),
    "Y_02_gf003_module_repr_reads_modules_property": ("GF003", f"`_modules` (line 12) {_RUNS}"),
    "Y_04_gf003_classmethod_self_hands_class_as_profile": ("GF003", f"`__init__` (line 16) {_HANDED}"),
    "Y_05_gf003_class_cell_hands_class_as_profile": ("GF003", f"`__init__` (line 16) {_HANDED}"),
    "Y_06_gf003_super_thisclass_hands_class_as_profile": ("GF003", f"`__init__` (line 12) {_HANDED}"),
    "Y_08_gf003_sys_modules_item_attribute_hands_profile": ("GF003", f"`prof` (line 11) {_HANDED}"),
    # Near misses: a safe fix, executed exact.
    "Y_09_gf003_trusted_attribute_chain_near_miss": ("GF003", None),
    "Y_03_gf003_optimizer_module_plain_properties_near_miss": ("GF003", None),
    "Y_07_gf003_class_graph_reads_near_miss": ("GF003", None),
}

# Programs that leave a profile function behind: run in a process of their own.
APART = {
    "Y_04_gf003_classmethod_self_hands_class_as_profile",
    "Y_05_gf003_class_cell_hands_class_as_profile",
    "Y_06_gf003_super_thisclass_hands_class_as_profile",
    "Y_08_gf003_sys_modules_item_attribute_hands_profile",
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


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


# GF005 (review, round 15): a loss the caller hands in, selected by a form that gives an item as it
# is (`_held_in`, `_values_bound`'s `match`), keeps the unsafe fix and its reason.
_L = "        loss.backward(retain_graph=True)"
_SELECTED_LOSS = {
    "enumerate": ("        for _, loss in enumerate(losses):\n    " + _L, "[d]"),
    "values": ("        for loss in losses.values():\n    " + _L, '{"d": d}'),
    "zip": ("        for loss, k in zip(losses, 'a'):\n    " + _L, "[d]"),
    "match": ("        match losses:\n            case [loss]:\n        " + _L, "[d]"),
    "conditional": ("        loss = losses[0] if losses else None\n" + _L, "[d]"),
    "boolean": ("        loss = losses and losses[0]\n" + _L, "[d]"),
    "list_item": ("        loss = list(losses)[0]\n" + _L, "[d]"),
    "dict_copy": ('        loss = dict(losses)["d"]\n' + _L, '{"d": d}'),
    "comprehension": ('        loss = {k: v for k, v in losses.items()}["d"]\n' + _L, '{"d": d}'),
    "display_item": ("        loss = (losses,)[0][0]\n" + _L, "[d]"),
}


@pytest.mark.parametrize("name", sorted(_SELECTED_LOSS))
def test_a_loss_the_caller_hands_in_selected_as_it_is_keeps_an_unsafe_fix(tmp_path, name):
    backward, argument = _SELECTED_LOSS[name]
    path = tmp_path / "train.py"
    path.write_text(_PROGRAM.format(header="def update(self, losses):", backward=backward, argument=argument))
    check_case(path, ("GF005", "is the caller's (the parameter `losses`)"))


def test_a_loss_computed_from_a_selected_input_keeps_its_safe_fix(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(
        _PROGRAM.format(
            header="def update(self, xs):",
            backward="        x = xs[0] if xs else None\n        loss = (self.w * x).pow(2).sum()\n" + _L,
            argument="[torch.ones(3)]",
        ).replace("    g = (h * 3).sum()\n    g.backward()\n", "")
    )
    check_case(path, ("GF005", None))


def test_held_in():
    from gradfix.rules._gf005_needless_retain_graph_impl import _held_in

    def held(code):
        return [cst.Module([]).code_for_node(n) for n in _held_in(cst.parse_expression(code))]

    assert held("a if c else b.x") == ["a", "b.x"]
    assert held("list(zip(xs, ys))[0]") == ["xs", "ys"]
    assert held("d.values()") == ["d"]
    assert held("(xs * 2).sum()") == []
    assert held("sum(xs)") == []


def test_class_cell_and_bound_class_attributes():
    from gradfix.analysis.callees import _CLASS_GRAPH_ATTRIBUTES, _class_parameter_reads
    from gradfix.analysis.exprs import nodes_within

    assert {"__self__", "__thisclass__", "__self_class__", "__objclass__"} <= _CLASS_GRAPH_ATTRIBUTES
    classes = [
        n for n in cst.parse_module(
            "class A:\n    def f(self):\n        return __class__, self.__class__\n"
        ).body if isinstance(n, cst.ClassDef)
    ]
    names = [n for n in nodes_within(classes[0], cst.Name) if n.value == "__class__"]
    assert [id(n) in _class_parameter_reads(classes) for n in names] == [True, False]


def test_attribute_chain():
    from gradfix.analysis.callees import _attribute_chain

    assert _attribute_chain(cst.parse_expression("torch.nn.init"))
    assert not _attribute_chain(cst.parse_expression("sys.modules[__name__]"))
    assert not _attribute_chain(cst.parse_expression("importlib.import_module(name).sub"))
