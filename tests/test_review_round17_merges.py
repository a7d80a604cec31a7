"""Review round 17 (reviewer Y): merges of backward passes, round 16's analysis of the file's
`nn.Module` instances handed to code outside the file (`gradfix/analysis/handed_modules.py`).

Causes:
- Instances made where the file shows no `C(...)` call were never followed (`_Search.run` started
  from the calls of a class's name, `cls()`, `type(self)()`): an unpickler rebuilding an instance
  the file saved (`torch.save(Prof(), buf)` then `torch.load(buf, weights_only=False)`, Y_01;
  `torch.save` stays a harmless use); the collector finding a live one (`gc.get_objects()`,
  Y_08); `object.__new__(Prof)` then `nn.Module.__init__(p)` (round 14 took `__new__`'s argument as
  inert, Y_03); a class looked up by its name and called where it stands (`globals()["Prof"]()`,
  Y_02: `callees.handed_functions` hands on a class only when the lookup is not called). Now
  `_Search._made_by_no_call` (unpicklers and the collector, `_INSTANCE_SOURCES` and
  `_UNPICKLING_MODULES`, give instances of any module class of the file, but
  `torch.load(..., weights_only=True)`; `X.__new__(C)`, `X.__new__(cls)` of a class parameter give
  a `C`) and `_lookup_by_key` (a string naming a module class as `getattr`'s name or a namespace's
  key, called there: its result followed as an instance).
- A read of an attribute of a followed value was taken as harmless (torch's `Module` attribute or
  the file's), but torch's wrappers and containers give the module they hold by an attribute:
  `nn.DataParallel(Prof()).module` (Y_04), `nn.ModuleDict({"hook": Prof()}).hook` (Y_05); and
  `getattr(seq, "0")` by a literal name was followed only where a store of the file binds the name
  (Y_06). Now an attribute a wrapper gives its module by (`_WRAPPED_ATTRIBUTES`) or a name the file
  writes as a container's key (`_Search._strings`: a dict display's key, the first of a pair, a
  `dict(...)` keyword; not every string: `register_buffer("scale", ...)`) is followed as the
  instance, and `getattr` by any name is.
- `net.apply(fn)` was taken as a self-returning method only, but torch calls `fn` with every
  submodule (a hook registered on the module gets the module): a function not of the file keeps
  them (`apply(found.append)`, Y_07). Now such a call with an argument that is not a def or lambda
  of the file (`_CALLBACK_TAKING`, `_Search._file_callable`) hands on every module class's forward.
- `layers.append(Block())` bound the name `layers` and followed its reads, as a list the file
  builds; but the name may be another's list: `callbacks = gc.callbacks; callbacks.append(Watch())`
  hands the module to the collector, which calls it at a collection the allocations between the
  passes run (Y_11). Now the receiver must be bound (or the attribute stored) only to a new
  container (`_Search._fresh_container`).
- A builder's return (`def build(self): return Prof()`) was followed at each call of its name and
  a property's at each read of `.made`, not at a lookup by a string: `getattr(Factory(),
  "build")()` (Y_12), `getattr(Factory(), "made")` (Y_13). Now `_Search.returned` follows too the
  lookups by a literal name (`_lookup_by_key`; one not called where it stands is not proven) and
  the calls of `getattr` by a computed name.
- A module class's methods were its body's defs only (`_forwards`, `forwards_of`): a `forward`
  bound to a lambda in the class body (`forward = lambda self, frame, event, arg: ...`) left the
  class with no `forward` and no method to hand on (Y_15). Now `_class_methods` reads the lambdas a
  class body binds to a name as methods by that name.
- An instance handed to a function of the file was followed as the def's parameter
  (`_bind_parameters`), and to a class of the file as its `__init__`'s, decorated or not; but a
  decorated function's call runs the decorator's wrapper, which gets the argument first
  (`@traced def install(m)`, whose `inner(*args)` hands `args[0]` to `sys.setprofile`, Y_16). Now
  only decorators that pass the arguments on and keep none (`_PASSING_DECORATORS`: torch's grad
  modes; `staticmethod`, `classmethod`: `_Search._passing`), and a class with no decorator. The
  lead (stop 36) found the same through a class: `Base.install(self)` of a decorated method bound
  its first parameter unchecked (Y_21; Y_22 undecorated, a near miss).
- A property's value was followed at reads of its attribute, though the file resolves names by
  `operator.attrgetter` (`attrgetter("made")(Factory())`, Y_18): now not proven where the file
  uses a resolver (`_Search._lookups`). A read of a name as a parameter's default was skipped as a
  parameter (`_name_reads`, `returned`): `prof = Prof(); def install(m=prof): sys.setprofile(m)`
  (Y_19). Now a default is a read, followed as the parameter in that def's or lambda's body.

Near misses that stay safe and exact: a module of the file wrapped by `nn.DataParallel` and called,
its `.module` loaded from `torch.load(..., weights_only=True)` by `load_state_dict`, `apply` of a
def of the file, a `ModuleDict` submodule read by its key as an attribute and called,
`getattr(seq, "0")` called, a buffer named by a string (Y_09); a checkpoint read by `torch.load`
only loaded by `load_state_dict` into the module and the optimizer, `gc.collect()` (Y_10: what an
unpickler gives, followed as any module, is harmless as `load_state_dict`'s argument); builders
reached by `getattr` by a literal and a computed name, a property by `getattr`, their modules
appended to a `nn.ModuleList()` the file builds and called (Y_14); a module handed to functions of
the file decorated by `@torch.no_grad()` and `@torch.enable_grad()`, which call it (Y_17); a module
as the default of a def's and a lambda's parameter, called in their bodies (Y_20).
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case
from tests.test_review_round16_merges import _HEAD, _handed

CASES = sorted((Path(__file__).parent / "review_round17").glob("Y_*.py"))

_HANDED = "is handed to code outside the file, which may run it between the passes"
EXPECTED = {
    "Y_01_gf003_module_saved_and_loaded_as_profile": ("GF003", f"`forward` (line 14) {_HANDED}"),
    "Y_02_gf003_module_class_by_name_in_globals_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_03_gf003_module_made_by_dunder_new_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_04_gf003_wrapped_module_attribute_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_05_gf003_module_dict_key_attribute_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_06_gf003_sequential_getattr_literal_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_07_gf003_module_apply_outside_function_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_08_gf003_module_found_by_gc_as_profile": ("GF003", f"`forward` (line 14) {_HANDED}"),
    "Y_11_gf003_module_appended_to_outside_list_alias": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_12_gf003_builder_method_by_getattr_name_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_13_gf003_property_by_getattr_name_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_15_gf003_module_forward_lambda_as_profile": ("GF003", f"`a lambda` (line 18) {_HANDED}"),
    "Y_16_gf003_module_through_decorated_function_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_21_gf003_module_through_decorated_base_method_as_profile": ("GF003", f"`forward` (line 31) {_HANDED}"),
    "Y_22_gf003_module_through_base_method_kept_near_miss": ("GF003", None),
    "Y_18_gf003_property_by_attrgetter_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    "Y_19_gf003_module_as_parameter_default_as_profile": ("GF003", f"`forward` (line 13) {_HANDED}"),
    # Near misses: a safe fix, executed exact.
    "Y_09_gf003_module_loaded_wrapped_and_kept_near_miss": ("GF003", None),
    "Y_10_gf003_checkpoint_loaded_into_module_near_miss": ("GF003", None),
    "Y_14_gf003_builder_by_name_kept_near_miss": ("GF003", None),
    "Y_17_gf003_module_through_no_grad_function_near_miss": ("GF003", None),
    "Y_20_gf003_module_as_parameter_default_kept_near_miss": ("GF003", None),
}

# Every hole leaves a profile function behind: run in a process of its own.
APART = {name for name, (_, reason) in EXPECTED.items() if reason is not None}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


@pytest.mark.parametrize(
    "use",
    [
        "import io\nb = io.BytesIO()\ntorch.save(Net(), b)\nb.seek(0)\nsys.setprofile(torch.load(b))",
        "import pickle\nsys.setprofile(pickle.loads(blob))",
        "import pickle\nsys.setprofile(pickle.Unpickler(f).load())",
        "import gc\nsys.setprofile(gc.get_objects()[0])",
        "p = Net.__new__(Net)\nsys.setprofile(p)",
        "class Maker(Net):\n    @classmethod\n    def make(cls):\n        p = object.__new__(cls)\n        sys.setprofile(p)\n",
        "sys.setprofile(globals()['Net']())",
        "sys.setprofile(getattr(sys.modules[__name__], 'Net')())",
        "sys.setprofile(vars(sys.modules[__name__]).get('Net')())",
        "sys.setprofile(nn.DataParallel(Net()).module)",
        "sys.setprofile(torch.compile(Net())._orig_mod)",
        "sys.setprofile(nn.ModuleDict({'a': Net()}).a)",
        "sys.setprofile(nn.ModuleDict(dict(a=Net())).a)",
        "import collections\nsys.setprofile(nn.Sequential(collections.OrderedDict([('enc', Net())])).enc)",
        "sys.setprofile(getattr(nn.Sequential(Net()), '0'))",
        "found = []\nnn.Sequential(Net()).apply(found.append)\nsys.setprofile(found[0])",
        "reg = {}\nNet().register_forward_pre_hook(reg.setdefault)",
        "import gc\ncbs = gc.callbacks\ncbs.append(Net())",
        "import operator\nclass F:\n    @property\n    def made(self):\n        return Net()\nsys.setprofile(operator.attrgetter('made')(F()))",
        "p = Net()\ndef install(m=p):\n    sys.setprofile(m)",
        "p = Net()\ng = lambda m=p: sys.setprofile(m)",
        "def build():\n    return Net()\nsys.setprofile((lambda f=build: f())())",
        "def deco(f):\n    return f\n@deco\ndef run(m):\n    return m(1)\nrun(Net())",
        "def deco(c):\n    return c\n@deco\nclass T:\n    def __init__(self, m):\n        self.k = m(1)\nT(Net())",
        "class F:\n    def build(self):\n        return Net()\nsys.setprofile(getattr(F(), 'build')())",
        "class F:\n    def build(self):\n        return Net()\nsys.setprofile(vars(F)['build'](F()))",
        "class F:\n    def build(self):\n        return Net()\nk = 'bu' + 'ild'\nsys.setprofile(getattr(F(), k)())",
        "class F:\n    @property\n    def made(self):\n        return Net()\nsys.setprofile(getattr(F(), 'made'))",
        "class F:\n    def build(self):\n        return Net()\nb = getattr(F(), 'build')\nsys.setprofile(b())",
        "def install(hooks):\n    hooks.append(Net())\ninstall([])",
        "class H(nn.Module):\n    def __init__(self, hooks):\n        super().__init__()\n        self.hooks = hooks\n        self.hooks.append(Net())",
        "class H(nn.Module):\n    def __init__(self, hooks):\n        super().__init__()\n        setattr(self, 'hooks', hooks)\n        self.hooks = []\n        self.hooks.append(Net())",
    ],
)
def test_instances_made_or_given_back_unseen_are_followed(use):
    assert "Base" in _handed(_HEAD + use + "\n")


@pytest.mark.parametrize(
    "use",
    [
        "import io\nb = io.BytesIO()\ntorch.save(Net(), b)\nb.seek(0)\nm = torch.load(b, weights_only=True)",
        "m = Net()\nm.load_state_dict(torch.load('ckpt.pt')['model'])",
        "m = nn.DataParallel(Net())\nm.module.load_state_dict({})\nm(1)",
        "m = nn.ModuleDict({'a': Net()})\nm.a(1)",
        "m = getattr(nn.Sequential(Net()), '0')\nm(1)",
        "def init(m):\n    return m\nNet().apply(init)",
        "Net().apply(lambda m: None)",
        "class Buf(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.register_buffer('scale', torch.ones(1))\n"
        "    def forward(self, x):\n        return torch.exp(x * self.scale)\nsys.setprofile(Buf()(1))",
        "m = getattr(sys.modules[__name__], 'Net')()\nm(1)",
        "layers = []\nlayers.append(Net())\nseq = nn.Sequential(*layers)\nseq(1)",
        "class F:\n    def build(self):\n        return Net()\nm = getattr(F(), 'build')()\nm(1)",
        "@torch.no_grad()\ndef run(m):\n    return m(1)\nrun(Net())",
        "p = Net()\ndef run(x, m=p):\n    return m(x)\nrun(1)",
        "class T:\n    @classmethod\n    def run(cls, m):\n        return m(1)\n    def go(self):\n        return self.run(Net())",
        "import collections\nq = collections.deque()\nq.append(Net())\nq[0](1)",
        "class H(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = nn.ModuleList()\n        self.blocks = list()\n        self.blocks.append(Net())",
    ],
)
def test_kept_uses_hand_nothing(use):
    assert "Base" not in _handed(_HEAD + use + "\n")


def test_class_body_lambdas_are_methods():
    import libcst as cst

    from gradfix.analysis.handed_modules import _class_methods, _forwards

    (cls,) = cst.parse_module(
        "class P(nn.Module):\n    forward = lambda self, x: x\n    scale: object = lambda self: 2\n    k = 3\n    def helper(self):\n        return 1\n"
    ).body
    assert [name for name, _ in _class_methods(cls)] == ["forward", "scale", "helper"]
    assert [type(m).__name__ for m in _forwards(None, [cls])] == ["Lambda"]
