"""Review round 14 (reviewer W): merges of backward passes, holes left after round 13 in
`CalleeClassifier.handed_functions` and in the special methods that run with no call by name.

Causes:
- A `threading.Thread` subclass of the file runs its `run` in another thread once `start()` is
  called, with no call by that name; a `q.get(timeout=...)` between the passes (a harmless method)
  waits for it to read `w.grad` (W_01). Now `Thread` is no proven base (below).
- `min`/`max` (`_RUNS_NOW`) were taken to keep nothing of any argument, but they return one of
  their positional arguments (and `sorted` a list of its iterable's items): `sys.setprofile(max(prof,
  quiet, key=...))` (W_02). Now only their `key=` is exempt where the result is kept (`runs_only`).
- A lookup by a computed name reached methods only, a module-level def being "left to
  `dynamic_global`", which `handed_functions` never asked; and `globals()[k]` was no string lookup
  (only `vars(o)[k]`, `o.__dict__[k]`, `getattr`): `name = "prof"; sys.setprofile(globals()[name])`
  (W_03). Now `globals()`/`locals()`/`vars()`, `__dict__`, `__globals__`, `f_globals` read by a key
  (a subscript, `.get`, `.pop`, `.setdefault`, `.__getitem__`) are lookups (`namespace`), and a
  computed name reaches module-level defs and classes where `exprs.dynamic_global` finds the module's
  namespace reachable (`module_reached`). And a namespace read whole, not by a key
  (`globals().values()` iterated, W_14), gives every def it holds: the module's (`globals()`,
  `locals()`, `vars()`, `__globals__`, `f_globals`) and a class's of the file (`vars(K)`,
  `K.__dict__`) count as a lookup by a computed name (`whole_namespace`, `lookup_holders`).
- A class handed on by a parameter Python binds to it, not by its name: a classmethod's `cls`
  (`Prof.install()` running `sys.setprofile(cls)`, W_05), `__init_subclass__`'s `cls` (W_06), and a
  metaclass of the file, which gets every class it makes (`Installing.__init__(cls, ...)`, W_07).
  Now a read of such a parameter (`_class_parameter_reads`: a classmethod's, `__init_subclass__`'s,
  `__class_getitem__`'s and `__new__`'s first, `__set_name__`'s owner, every method's first of a
  metaclass (`_metaclass`: based on `type` or named by a `metaclass=`) and the class its `__new__`
  makes) other than as a callee, an attribute's receiver, a checked class or the first argument of a
  `__new__` hands on every class's construction.

- A class reached by walking the class graph from another class, by no name of it read as a value:
  `Hook.__subclasses__()[0]` (W_11), `Quiet.__mro__[1]` (W_12); round 13 followed `type(x)` and
  `x.__class__` only. Now `__mro__`, `__bases__`, `__base__` read and `__subclasses__()`, `mro()`
  called (`_CLASS_GRAPH_ATTRIBUTES`, `_CLASS_GRAPH_METHODS`) hand on any class's construction; so
  does `__call__` read as a value, which on a class is `type.__call__` bound to it and constructs
  it (`sys.setprofile(Prof.__call__)`, W_13; round 13 handed on the file's `__call__` defs only).
- A library base's own code calls plain-named methods of a subclass, which round 12 listed for
  torch's `Module` only (`_MODULE_SELF_CALLS`): `print(tally)` between the passes runs
  `Counter.__repr__`, which calls `self.most_common()`, an override of the file (W_09; and
  `Thread.start` runs `run`, W_01). Now a class's bases are proven (`FileFacts._base_self_calls`):
  `object`, the builtin exceptions, torch's datasets call none, an `nn.Module` (Lightning's too) the
  listed ones, a class of the file what its bases call; any other base may call any method but the
  called dunders (`_CALLED_DUNDERS`), which then counts as a special method (`implicit_dunders`),
  and so do the methods it inherits from classes of the file (`class Tally(Watched, Counter)`:
  `Watched.most_common`, W_16; `FileFacts._file_ancestors`).

- GF005 (`_loss_from_caller`, round 13) followed a loss to a parameter through `name = <path>`
  only: `d_loss, _ = losses`, `loss: Tensor = losses[0]`, `(loss := losses[0])`,
  `losses.get("d")`, `a, b = x, losses` gave a safe fix where the caller is in another file (the
  tests here keep a caller in the file, and check the reason). Now every binding form of the name is
  followed (`_values_bound`, `_matching_element`, `_elements`) and item getters give their holder
  (`_item_of`: `get`, `pop`, `getattr`).

Near misses that stay safe and exact: a def of the file as `sorted`'s and `max`'s `key=`, `max` of
numbers, a plain class's `run`, a literal `getattr` called where it stands (W_04); a classmethod
factory `cls(...)`, `isinstance(x, cls)`, `cls.__name__`, `super().__new__(cls)`, a store on
`cls.made`, a metaclass with no method (W_08); methods that change state in classes based on
`nn.Module`, a torch `Dataset`, `RuntimeError` and a class of the file, with `print`, `len`, `str`
between the passes (W_10); `vars(opts)` of an instance and `globals()["SCALE"]` by a literal key
naming no def, with a module-level def that changes state (W_15); a custom autograd Function
whose `forward` saves a tensor and a custom optimizer whose `step` changes state (W_17); a GF005
loss built in the function and unpacked from a display (`loss, scale = (...).sum(), 1.0`).
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.callees import _class_parameter_reads
from tests.test_gf005_caller_loss import _PROGRAM
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round14").glob("W_*.py"))

_HANDED = "is handed to code outside the file, which may run it between the passes"
EXPECTED = {
    "W_01_gf003_thread_subclass_run_reads_grad": ("GF003", "`run` (line 14) runs without a call by name"),
    "W_02_gf003_max_returns_profile_function": ("GF003", f"`prof` (line 11) {_HANDED}"),
    "W_03_gf003_globals_computed_name_profile": ("GF003", f"`prof` (line 11) {_HANDED}"),
    "W_05_gf003_classmethod_hands_cls_as_profile": ("GF003", f"`__init__` (line 12) {_HANDED}"),
    "W_06_gf003_init_subclass_hands_cls_as_profile": ("GF003", f"`__init__` (line 18) {_HANDED}"),
    "W_07_gf003_metaclass_hands_class_as_profile": ("GF003", f"`__init__` (line 12) {_HANDED}"),
    "W_09_gf003_counter_repr_runs_most_common_override": ("GF003", "`most_common` (line 12) runs without a call by name"),
    "W_11_gf003_subclasses_hands_class_as_profile": ("GF003", f"`__init__` (line 16) {_HANDED}"),
    "W_12_gf003_mro_hands_base_class_as_profile": ("GF003", f"`__init__` (line 12) {_HANDED}"),
    "W_13_gf003_class_dunder_call_hands_construction": ("GF003", f"`__init__` (line 12) {_HANDED}"),
    "W_14_gf003_globals_values_hands_profile": ("GF003", f"`prof` (line 12) {_HANDED}"),
    "W_16_gf003_mixin_method_called_by_counter_base": ("GF003", "`most_common` (line 12) runs without a call by name"),
    # Near misses: a safe fix, executed exact.
    "W_04_gf003_runs_keys_plain_run_near_miss": ("GF003", None),
    "W_08_gf003_class_parameters_inert_reads_near_miss": ("GF003", None),
    "W_10_gf003_module_dataset_exception_methods_near_miss": ("GF003", None),
    "W_15_gf003_instance_vars_literal_global_near_miss": ("GF003", None),
    "W_17_gf003_autograd_function_optimizer_bases_near_miss": ("GF003", None),
}

# Programs that leave process state behind (a profile function, a daemon thread): run in a process
# of their own.
APART = {
    "W_01_gf003_thread_subclass_run_reads_grad",
    "W_02_gf003_max_returns_profile_function",
    "W_03_gf003_globals_computed_name_profile",
    "W_05_gf003_classmethod_hands_cls_as_profile",
    "W_06_gf003_init_subclass_hands_cls_as_profile",
    "W_07_gf003_metaclass_hands_class_as_profile",
    "W_11_gf003_subclasses_hands_class_as_profile",
    "W_12_gf003_mro_hands_base_class_as_profile",
    "W_13_gf003_class_dunder_call_hands_construction",
    "W_14_gf003_globals_values_hands_profile",
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
    "bases, expected",
    [
        ("object", frozenset()),
        ("RuntimeError", frozenset()),
        ("Dataset", frozenset()),
        ("Dataset[int]", frozenset()),
        ("nn.Module", "module"),
        ("collections.Counter", None),
        ("threading.Thread", None),
        ("torch.autograd.Function", frozenset()),
        ("Local", frozenset()),
        ("Local, collections.Counter", None),
    ],
)
def test_base_self_calls(bases, expected):
    from gradfix.analysis.facts import _MODULE_SELF_CALLS

    facts = _facts(
        "import collections\nimport threading\nimport torch\nfrom torch import nn\nfrom torch.utils.data import Dataset\n"
        f"class Local:\n    pass\nclass K({bases}):\n    pass\n"
    )
    node = facts.class_names["K"][0]
    assert facts._base_self_calls(node, set()) == (_MODULE_SELF_CALLS if expected == "module" else expected)


def _classes(source: str):
    return [n for n in cst.parse_module(source).body if isinstance(n, cst.ClassDef)]


def test_class_parameter_reads():
    classes = _classes(
        "class A:\n"
        "    @classmethod\n    def c(cls):\n        return cls\n"
        "    def __init_subclass__(k):\n        k\n"
        "    def __set_name__(self, owner, name):\n        self, owner\n"
        "    def m(self):\n        return self\n"
    )
    read = sorted({n.value for n in _within(classes) if id(n) in _class_parameter_reads(classes)})
    assert read == ["cls", "k", "owner"]


def test_metaclass_parameters_and_what_its_new_makes_are_read():
    classes = _classes(
        "class M(type):\n"
        "    def __new__(mcs, *a):\n        made = super().__new__(mcs, *a)\n        other = 1\n        return made, other\n"
        "    def tag(cls):\n        return cls\n"
        "class K(metaclass=M):\n    def f(self):\n        return self\n"
        "class N(Base):\n    def g(me):\n        return me\n"
    )
    read = sorted({n.value for n in _within(classes) if id(n) in _class_parameter_reads(classes)})
    assert read == ["cls", "made", "mcs"]


def _within(classes):
    from gradfix.analysis.exprs import nodes_within

    return [n for c in classes for n in nodes_within(c, cst.Name)]


# GF005 (review, round 14): a loss the caller hands in, read through any binding of the body
# (`_loss_from_caller`, `_values_bound`, `_item_of`), keeps the unsafe fix and its reason; round 13
# followed `name = <path>` only, and gave a safe fix where the caller is in another file.
_HANDED_LOSS = {
    "tuple_unpacking": ("def update(self, losses):", "        d_loss, _ = losses\n        d_loss.backward(retain_graph=True)", "(d, d)"),
    "annotated": ("def update(self, losses):", "        loss: torch.Tensor = losses[0]\n        loss.backward(retain_graph=True)", "[d]"),
    "walrus": (
        "def update(self, losses):",
        "        if (loss := losses[0]) is not None:\n            loss.backward(retain_graph=True)",
        "[d]",
    ),
    "get": ("def update(self, losses):", '        loss = losses.get("d")\n        loss.backward(retain_graph=True)', '{"d": d}'),
    "display": ("def update(self, x, losses):", "        a, b = x, losses\n        b.backward(retain_graph=True)", "1.0, d"),
}


@pytest.mark.parametrize("name", sorted(_HANDED_LOSS))
def test_a_loss_the_caller_hands_in_by_any_binding_keeps_an_unsafe_fix(tmp_path, name):
    header, backward, argument = _HANDED_LOSS[name]
    path = tmp_path / "train.py"
    path.write_text(_PROGRAM.format(header=header, backward=backward, argument=argument))
    check_case(path, ("GF005", "is the caller's (the parameter `losses`)"))


def test_a_loss_built_in_the_function_and_unpacked_keeps_its_safe_fix(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(
        _PROGRAM.format(
            header="def update(self, x):",
            backward="        loss, scale = (self.w * x).pow(2).sum(), 1.0\n        (loss * scale).backward(retain_graph=True)",
            argument="torch.ones(3)",
        ).replace("    g = (h * 3).sum()\n    g.backward()\n", "")
    )
    check_case(path, ("GF005", None))
