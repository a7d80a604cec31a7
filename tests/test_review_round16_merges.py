"""Review round 16 (reviewer Y): merges of backward passes, an instance of an `nn.Module` class of
the file handed to code outside the file.

Causes:
- Round 12 handed on every `__call__` of the file's classes (`CalleeClassifier.handed_functions`),
  for an instance handed on is called by it; but a module's `__call__` is torch's, which runs
  `forward`. An instance handed on runs its `forward` where outside code decides, between the
  passes too: `sys.setprofile(Prof())` (Y_01), `weakref.finalize(box, Report())` (Y_02); so
  through torch's self-returning methods (`Prof().to("cpu").train()`, Y_03), a builder's return in
  an `nn.Sequential` handed to `log.addFilter` (Y_04), a store on an object not of the file
  (`ns.prof = Prof()`, Y_05), `self` handed on in a method (Y_06), a function of the file's
  parameter (Y_07), an item of a list (Y_09). Handing on every `forward` costs the merges of every
  file whose `forward` calls a submodule, so now the instance is followed
  (`handed_modules._Search`): from each `C(...)` of a module class of the file and each `self` of
  its methods, through names, attributes of `self`, self-returning methods, torch's containers and
  wrappers, copies, builders' returns, function parameters; a use not proven harmless (called, a
  receiver of an attribute, a test, `print`/`isinstance`/`len`) hands on that class's `forward`,
  its bases' and subclasses' of the file (`handed_module_forwards`).
- A module class of the file with no `forward` of its own runs torch's, which may call methods of
  the file (`class Scaled(nn.Conv1d)` overriding `_conv_forward`, handed to `weakref.finalize`,
  Y_15). Now a class based on `torch.nn` or Lightning (through classes of the file too) is a module
  class (`module_classes`, `_torch_module_base`), and where none of the file's is its `forward`,
  every method of it but its construction is handed on with its instance (`forwards_of`).
- Round 13 handed on a class of the file read other than as a callee (`make = Prof`) with only its
  construction (`__init__`); the instance outside code builds runs `forward` too (Y_08). Now a
  module class read so hands on its `forward`s as well (`forwards_of`).

- Round 15 kept a def of the file named as an attribute of a chain of attributes from a trusted
  module off the file's defs (`_attribute_chain`: `torch.nn.init.zeros_`), but the file may have
  stored its own module on that chain (`torch.me = sys.modules[__name__]`, then
  `sys.setprofile(torch.me.prof)`, Y_12). Now a chain through an attribute the file binds on some
  object (`facts.bound_attribute_names`) may reach the file's defs (`_chain_bound_by`); round 15's
  near miss Y_09 (torch's chains) stays safe.
- Round 14 read a class parameter (`cls` of a classmethod) and round 15 the `__class__` cell in a
  method as a class handed on, found by `nodes_within`, which leaves lambdas' bodies out:
  `sys.setprofile((lambda: __class__)())` (Y_13), `sys.setprofile((lambda: cls)())` (Y_14). Now
  `_class_parameter_reads` reads lambdas' bodies too (`walk.preorder`), and `__class__` anywhere in
  a class body.

Near misses that stay safe and exact: modules whose `forward` changes state kept in the file:
submodules called, in `nn.ModuleList`/`nn.Sequential`, walked by `self.modules()`, a builder
through `.to().train()`, `copy.deepcopy`, `model.parameters()` to an optimizer, `print` (Y_10);
`nn.DataParallel(Net())` handed to a function of the file that calls it, `add_module` read by
`getattr(self, "first")`, `nn.Sequential(*layers)` of appended blocks (Y_11); a `Conv1d` subclass
of the file overriding `_conv_forward`, kept as a submodule and called before the passes (Y_16).
"""
from pathlib import Path

import libcst as cst
import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round16").glob("Y_*.py"))

_HANDED = "is handed to code outside the file, which may run it between the passes"
EXPECTED = {
    "Y_01_gf003_module_instance_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_02_gf003_module_instance_as_finalizer": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_03_gf003_module_to_train_chain_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_04_gf003_builder_returns_sequential_as_log_filter": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_05_gf003_module_stored_outside_as_profile": ("GF003", f"`forward` (line 14) {_HANDED}"),
    "Y_06_gf003_module_self_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_07_gf003_module_through_parameter_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_08_gf003_module_class_alias_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_09_gf003_module_in_list_item_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_12_gf003_trusted_chain_attribute_bound_by_file": ("GF003", f"`prof` (line 11) {_HANDED}"),
    "Y_13_gf003_class_cell_in_lambda_as_profile": ("GF003", f"`__init__` (line 16) {_HANDED}"),
    "Y_14_gf003_class_parameter_in_lambda_as_profile": ("GF003", f"`__init__` (line 16) {_HANDED}"),
    "Y_15_gf003_torch_forward_calls_file_method_in_finalizer": ("GF003", f"`_conv_forward` (line 14) {_HANDED}"),
    # Near misses: a safe fix, executed exact.
    "Y_10_gf003_module_instances_kept_in_file_near_miss": ("GF003", None),
    "Y_11_gf003_module_wrapped_and_passed_near_miss": ("GF003", None),
    "Y_16_gf003_torch_based_module_called_in_file_near_miss": ("GF003", None),
}

# Programs that leave a profile function or a finalizer behind: run in a process of their own.
APART = {
    "Y_01_gf003_module_instance_as_profile",
    "Y_02_gf003_module_instance_as_finalizer",
    "Y_03_gf003_module_to_train_chain_as_profile",
    "Y_05_gf003_module_stored_outside_as_profile",
    "Y_06_gf003_module_self_as_profile",
    "Y_07_gf003_module_through_parameter_as_profile",
    "Y_08_gf003_module_class_alias_as_profile",
    "Y_09_gf003_module_in_list_item_as_profile",
    "Y_12_gf003_trusted_chain_attribute_bound_by_file",
    "Y_13_gf003_class_cell_in_lambda_as_profile",
    "Y_14_gf003_class_parameter_in_lambda_as_profile",
    "Y_15_gf003_torch_forward_calls_file_method_in_finalizer",
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


def _handed(source: str):
    """The names of the classes whose `forward` `handed_module_forwards` hands on."""
    from gradfix.analysis.callees import CalleeClassifier
    from gradfix.analysis.facts import FileFacts
    from gradfix.analysis.handed_modules import handed_module_forwards
    from gradfix.analysis.positions import node_maps
    from libcst.metadata import MetadataWrapper, ScopeProvider

    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    facts = FileFacts(module, node_maps(module))

    def get_metadata(provider, node, default=None):
        return scopes.get(node, default) if provider is ScopeProvider else default

    classifier = CalleeClassifier(get_metadata, facts)
    forwards = handed_module_forwards(facts, classifier)
    classes = {id(s): name for name, group in facts.class_names.items() for c in group for s in c.body.body}
    return sorted(classes[id(f)] for f in forwards)


_HEAD = (
    "import sys, copy\nimport torch\nfrom torch import nn\n"
    "class Base(nn.Module):\n    def forward(self, x):\n        return x\n"
    "class Net(Base):\n    pass\n"
    "class Sub(Net):\n    def forward(self, x):\n        return x\n"
    "class Other(nn.Module):\n    def forward(self, x):\n        return x\n"
)


@pytest.mark.parametrize(
    "use",
    [
        "sys.setprofile(Net())",
        "m = Net().cuda()\nsys.setprofile(m)",
        "m = nn.ModuleList([Net()])\nsys.setprofile(m[0])",
        "m = copy.deepcopy(Net())\nhooks = {'a': m}\nsys.setprofile(hooks['a'])",
        "def f():\n    return Net()\nsys.setprofile(f())",
        "def f():\n    return Net()\nsys.setprofile(f)",
        "def f():\n    yield Net()",
        "g = lambda: Net()",
        "class Holder:\n    def __init__(self):\n        self.m = Net()\nsys.setprofile(Holder().m)",
        "x = [Net()]\nx[0].register_forward_hook(print)\nsys.setprofile(*x)",
        "def run(m):\n    sys.setprofile(m)\nrun(m=Net())",
        "t = Net()\nt += 1",
    ],
)
def test_instance_handed_on_hands_its_forwards(use):
    # Net's `forward` is Base's; `self` in it may be a Sub's.
    assert _handed(_HEAD + use + "\n") == ["Base", "Sub"]


@pytest.mark.parametrize(
    "use",
    [
        "m = Net().to('cpu').train()\nm(1)\nprint(m, isinstance(m, nn.Module), len(list(m.parameters())))",
        "opt = torch.optim.SGD(Net().parameters(), lr=0.1)",
        "class Holder(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.m = Net()\n"
        "    def forward(self, x):\n        return self.m(x)\nHolder()(1)",
        "d = nn.parallel.DistributedDataParallel(Net())\nd(1)",
        "m = torch.compile(Net())\nm(1)",
        "def run(m, x):\n    return m(x)\nrun(Net(), 1)",
        "for m in Net().modules():\n    if isinstance(m, nn.Linear):\n        print(m.weight)",
        "if Net() is None:\n    pass",
    ],
)
def test_instance_kept_in_the_file_hands_nothing(use):
    assert _handed(_HEAD + use + "\n") == []


@pytest.mark.parametrize(
    "use",
    [
        "for m in Net().modules():\n    sys.setprofile(m)",
        "sys.setprofile(Net()._modules['a'])",
        "class Maker(nn.Module):\n    def forward(self, x):\n        return x\n    def again(self):\n        return type(self)()\n"
        "sys.setprofile(Maker().again())",
    ],
)
def test_submodules_or_class_by_no_name_hand_on_every_forward(use):
    # What `modules()` gives, or `type(self)()` makes, may be of any module class of the file.
    assert set(_handed(_HEAD + use + "\n")) >= {"Base", "Other", "Sub"}


def test_torch_based_class_without_forward_hands_its_methods():
    source = (
        "import sys\nfrom torch import nn\nclass Lin(nn.Linear):\n    def helper(self):\n        return 1\n"
        "    def __init__(self):\n        super().__init__(1, 1)\nsys.setprofile(Lin())\n"
    )
    assert _handed(source) == ["Lin"]  # `helper`, not `__init__`


def test_self_handed_on_in_a_method():
    source = _HEAD + "class Hook(nn.Module):\n    def forward(self, x):\n        return x\n    def go(self):\n        sys.setprofile(self)\n"
    assert _handed(source) == ["Hook"]


@pytest.mark.parametrize(
    "use",
    [
        "n = Net()\nsys.setprofile(n.__call__)",
        "prof = Net()\nsys.setprofile(globals()['prof'])",
        "class Holder:\n    prof = Net()\nsys.setprofile(Holder.prof)",
        "class Holder:\n    def __init__(self):\n        self._n = Net()\n    @property\n    def n(self):\n        return self._n\n"
        "sys.setprofile(Holder().n)",
        "class Maker(Net):\n    @classmethod\n    def make(cls):\n        return cls()\nsys.setprofile(Maker.make())",
        "with Net() as n:\n    pass",
        "prof = Net()\ng = lambda: prof",
        "def install(*hooks):\n    sys.setprofile(hooks[0])\ninstall(Net())",
        "import functools\nsys.setprofile(functools.partial(Net()))",
        "class Holder:\n    def __init__(self):\n        self.enc = Net()\nkey = 'enc'\nsys.setprofile(getattr(Holder(), key))",
        "class Holder:\n    def __init__(self):\n        self.enc = Net()\nsys.setprofile(getattr(Holder(), 'enc'))",
        "m = nn.ModuleDict({'a': Net()})\nsys.setprofile(list(m.values())[0])",
    ],
)
def test_more_ways_of_handing_on(use):
    assert "Base" in _handed(_HEAD + use + "\n")


def test_vars_of_an_instance_is_followed_as_its_namespace():
    """Stop 35 (lead, after the merge): `vars(lit)` is `lit.__dict__`, followed as the holder of its
    attributes: its keys printed hand nothing on (a LightningModule's `training_step` stays
    unhanded), its values handed to outside code hand its submodules on."""
    from tests.test_field_cases import _lint
    from tests.test_lightning_log import GF001_SRC

    pytest.importorskip("torch")
    kept = GF001_SRC.replace("lit = Lit()\n", "lit = Lit()\nprint(sorted(vars(lit).keys()))\n")
    handed = GF001_SRC.replace("lit = Lit()\n", "lit = Lit()\nimport sys\nsys.setprofile(list(vars(lit).values())[0])\n")
    assert [f.fixable for f in _lint(kept, ["GF001"]).findings] == [True]
    (finding,) = _lint(handed, ["GF001"]).findings
    assert not finding.fixable and "`training_step` (line 11) is handed to code outside the file" in finding.message
