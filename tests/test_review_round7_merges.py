"""Review round 7 (reviewer X): merges of backward passes, what keeps a tensor of the graph, and
gradient hooks by computed names: holes in round 6's proofs.

Causes:
- `backward.fresh_binding` read the values `loops.assignments` gives, which leaves out parameters
  (`def step(keep=None): if keep is None: keep = []`), `match` captures (`case list() as keep`) and
  takes an import (`from __main__ import kept as keep`) for a fresh value: `keep += [l1]` then
  extends the caller's or the module's list. Now a parameter is never fresh, and every binding of
  the name in the function's own scope must be a plain assignment (`=`, `:=`, annotated) of a fresh
  value: `exprs.binding_counts` of the scope must count no other form.
- `facts._changes_state` (a special method that may keep its operand or change state: `__radd__`,
  `__lt__`, ...) saw stores, `+=`, `setattr` and container methods by name, not the operand handed
  on: to a helper of the file (`record(other)`, `self.keep(other)`), to a library function
  (`heapq.heappush(kept, other)`), or through a special method called by name
  (`kept.__iadd__([other])`). Now a call of a function or method of the file is followed (it must
  change nothing itself), and a parameter or a name the body binds handed to any callee but a
  builtin that keeps nothing, a pure tensor or read-only method, or a function of torch/math/numpy
  makes the method state-changing (`FileFacts.implicit_dunders`).
- `backward.computed_method_calls` saw a class namespace read by a subscript only: `.get(key)`
  (`torch.Tensor.__dict__.get("register_%s" % "hook")`), a copy (`dict(vars(torch.Tensor))[k]`) and
  `inspect.getmembers(T)` reach `register_hook` by a key gradfix does not see. Now a namespace
  (`x.__dict__`, `vars(x)`, `inspect.getmembers(x)`) counts unless it is subscripted, read by
  `.get`/`.pop`/`.setdefault` with a key that cannot spell `register_...`, asked for its keys,
  stored into (`self.__dict__.update(kw)`) or displayed (`print`, `sorted`, `json.dump`, a log).
- `FileFacts.tensor_subclasses` read a class's bases by their last name (`...Tensor`,
  `...Parameter`): a base under another name (`TT = torch.Tensor`, `from torch import Tensor as
  Base`), a call's result (`type(torch.zeros(1))`) and a class made by `type(name, bases, ns)` were
  no tensor subclass, so an `__add__` they override ran once more for the merged sum. Now a base
  name of the file is followed to what it is bound to (any binding form but an assignment, an
  import or a class statement counts as a tensor class), a call base is one (but `namedtuple`), and
  a 3-argument `type(...)` or `types.new_class` makes one.
- `FileFacts.implicit_dunders` saw special methods defined by `def` only: one bound in a class body
  to another object (`__radd__ = kept.append`, `__radd__ = list.append`), set on a class from
  outside (`Acc.__radd__ = f`) or by `setattr(Acc, "__radd__", f)` ran at `l1 + acc` and kept the
  loss. Now such a binding counts unless its value is a literal or a method of the class that
  changes nothing (`__radd__ = __add__`, `__hash__ = None`, `__slots__ = ()`).
- `Backpropagators.uses` collected a reference to a function that backpropagates where it was
  called by name, handed on as an argument, stored or returned: `(again if ok else f)()`,
  `(again or f)()`, `again.__call__()` and `match again: case f: f()` call it with no call of its
  name. Now every reference but a call's callee, a binding and a keyword counts as a use.

Near misses that stay safe and exact: a list made in the function only (X_12), a special method
calling a pure helper of the file and builtins (X_13), namespaces read by literal keys, sorted or
updated (X_14), bases that name no tensor class and inert special-method bindings (X_22), a function that
backpropagates run outside the merging function only (X_27).
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.backward import computed_method_calls
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from tests.test_review_reproducers import ALL, check_case

CASES = sorted((Path(__file__).parent / "review_round7").glob("X_*.py"))

_DUNDER = "runs without a call by name"
_COMPUTED = "calls a method by a computed name"
_TORCH = "may run code of the file at each torch call on a tensor"
_LATER = "a later `again`, which may backpropagate, (line 16) may use a graph"
EXPECTED = {
    "X_01_gf003_parameter_rebound_in_branch": ("GF003", "`keep +=` (line 15) may change an object from outside the call in place"),
    "X_02_gf003_match_capture_binds_augmented_name": ("GF003", "`keep +=` (line 18) may change an object from outside the call in place"),
    "X_03_gf003_import_binds_augmented_name": ("GF003", "`keep +=` (line 18) may change an object from outside the call in place"),
    "X_04_gf003_dunder_keeps_through_helper": ("GF003", f"`__radd__` (line 13) {_DUNDER}"),
    "X_05_gf003_comparison_dunder_keeps_through_helper": ("GF003", f"`__lt__` (line 13) {_DUNDER}"),
    "X_06_gf003_dunder_keeps_through_library_call": ("GF003", f"`__radd__` (line 9) {_DUNDER}"),
    "X_07_gf003_dunder_keeps_through_method": ("GF003", f"`__radd__` (line 9) {_DUNDER}"),
    "X_08_gf003_dunder_keeps_through_special_method_call": ("GF003", f"`__radd__` (line 9) {_DUNDER}"),
    "X_09_gf003_hook_from_namespace_get": ("GF003", f"`torch.Tensor.__dict__` (line 7) {_COMPUTED}"),
    "X_10_gf003_hook_from_copied_namespace": ("GF003", f"`vars(torch.Tensor)` (line 7) {_COMPUTED}"),
    "X_11_gf003_hook_from_getmembers": ("GF003", f"`inspect.getmembers(torch.Tensor)` (line 7) {_COMPUTED}"),
    "X_15_gf003_tensor_subclass_base_alias": ("GF003", f"`Logged` (line 8) {_TORCH}"),
    "X_16_gf003_tensor_subclass_base_imported_as": ("GF003", f"`Logged` (line 8) {_TORCH}"),
    "X_17_gf003_tensor_subclass_base_by_call": ("GF003", f"`Logged` (line 5) {_TORCH}"),
    "X_18_gf003_tensor_subclass_made_by_type": ("GF003", f'`type("Logged", (torch.Tensor,), {{"__add__": add}})` (line 10) {_TORCH}'),
    "X_19_gf003_class_body_dunder_bound_method": ("GF003", f"`__radd__ = kept.append` (line 10) {_DUNDER}"),
    "X_20_gf003_class_body_dunder_unbound_builtin": ("GF003", f"`__radd__ = list.append` (line 10) {_DUNDER}"),
    "X_21_gf003_setattr_dunder_by_literal": ("GF003", f'`setattr(Acc, "__radd__", kept.append)` (line 13) {_DUNDER}'),
    "X_23_gf003_later_backward_called_through_conditional": ("GF003", _LATER),
    "X_24_gf003_later_backward_called_through_or": ("GF003", _LATER),
    "X_25_gf003_later_backward_called_by_dunder_call": ("GF003", _LATER),
    "X_26_gf003_later_backward_bound_by_match_capture": ("GF003", _LATER),
    # Near misses: a safe fix, executed exact.
    "X_12_gf003_fresh_local_list_near_miss": ("GF003", None),
    "X_13_gf003_dunder_pure_helper_near_miss": ("GF003", None),
    "X_14_gf003_namespace_read_by_name_near_miss": ("GF003", None),
    "X_22_gf003_class_bases_and_dunder_aliases_near_miss": ("GF003", None),
    "X_27_gf003_backprop_function_outside_near_miss": ("GF003", None),
}

# Programs that leave process state behind: run in a process of their own.
APART = {
    "X_09_gf003_hook_from_namespace_get",  # a hook on a module-level tensor
    "X_10_gf003_hook_from_copied_namespace",
    "X_11_gf003_hook_from_getmembers",
    "X_03_gf003_import_binds_augmented_name",  # imports `__main__`
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


# -- focused checks ------------------------------------------------------------------------------

_STEP = """import heapq
import torch
w = torch.randn(3, requires_grad=True)
kept = []
{extra}

def other():
    v = (w * 3).sin().sum()
    v.backward()


def step({params}):
{head}    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
{tail}"""


def _merge(tail, extra="", head="", params=""):
    source = _STEP.format(tail=tail, extra=extra, head=head, params=params)
    findings = lint_bytes(source.encode(), "train.py", LintOptions(ALL)).findings
    assert [f.code for f in findings] == ["GF003"], source
    return findings[0].fix.unsafe_reason or None


def test_fresh_binding_forms():
    tail = "    keep += [l1]\n"
    fresh = [
        ("", "    keep = []\n"),
        ("", "    keep = []\n    if l2 is None:\n        keep = [1.0]\n"),
        ("", "    keep: list = []\n"),
        ("", "    if (keep := []) is None:\n        pass\n"),
    ]
    for params, head in fresh:
        assert _merge(tail, head=head, params=params) is None, head
    outside = [
        ("keep", "    keep = []\n"),
        ("keep=None", "    if keep is None:\n        keep = []\n"),
        ("*keep", "    keep = []\n"),
        ("", "    keep = []\n    for keep in [kept]:\n        pass\n"),
        ("", "    keep = []\n    with open(__file__) as keep:\n        pass\n"),
        ("", "    keep = []\n    try:\n        pass\n    except Exception as keep:\n        pass\n"),
        ("", "    keep = []\n    import heapq as keep\n"),
        ("", "    keep = []\n    keep, x = kept, 1\n"),
        ("", "    global kept\n    kept = []\n"),
        ("", "    keep: list\n    keep = []\n"),
    ]
    for params, head in outside:
        reason = _merge(tail.replace("keep", "kept") if "global" in head else tail, head=head, params=params)
        assert reason is not None, (params, head)


def test_dunder_handing_on_its_operand():
    dunder = "{helpers}\nclass Acc:\n    def __radd__(self, x):\n        {body}\n        return self\n"
    kept = {
        ("", "record(x)"): "def record(v):\n    kept.append(v)\n",
        ("", "self.keep(x)"): "",
        ("", "heapq.heappush(kept, x)"): "",
        ("", "kept.__iadd__([x])"): "",
        ("", "app = kept.append\n        app(x)"): "",
        ("", "(lambda: kept.append(x))()"): "",
        ("", "out = [x]\n        heapq.heappush(kept, out)"): "",
        ("", "sorted([x], key=kept.append)"): "",
        ("", "len(x)"): "len = kept.append\n",
    }
    for (_, body), helpers in kept.items():
        extra = dunder.format(helpers=helpers, body=body)
        if "self.keep" in body:
            extra += "\n    def keep(self, v):\n        kept.append(v)\n"
        assert "`__radd__`" in (_merge("    print(l1 + 1)\n", extra=extra) or ""), body
    nothing = {
        "y = float(x)": "",
        "y = halve(x)": "def halve(v):\n    return v / 2\n",
        "y = self.half(x)": "",
        "y = torch.tanh(x).sum()": "",
        "y = x.detach().item()": "",
        "print(len(str(x)))": "",
    }
    for body, helpers in nothing.items():
        extra = dunder.format(helpers=helpers, body=body)
        if "self.half" in body:
            extra += "\n    def half(self, v):\n        return v / 2\n"
        assert _merge("    print(l1 + 1)\n", extra=extra) is None, body
    # A method of the file whose name the file also stores on an object may be that object.
    extra = dunder.format(helpers="", body="y = self.half(x)") + "\n    def half(self, v):\n        return v / 2\n\nacc = Acc()\nacc.half = kept.append\n"
    assert "`__radd__`" in (_merge("    print(l1 + 1)\n", extra=extra) or "")


def test_namespace_reads():
    source = """vars(T).get(k)(h, f)
T.__dict__.get('register_' + kind)(h, f)
dict(vars(T))[k](h, f)
inspect.getmembers(T)
ns = vars(T)
for n, m in T.__dict__.items():
    pass
use(vars(T))
f(**vars(T))
vars(cfg).get('lr')
print(sorted(vars(cfg)), len(T.__dict__), f'{vars(cfg)}')
self.__dict__.update(kw)
json.dump(vars(cfg), fh)
T.__dict__['shape']
list(vars(cfg).keys())
"""
    module = cst.parse_module(source)
    assert [module.code_for_node(c) for c in computed_method_calls(module)] == [
        "vars(T)", "T.__dict__", "'register_' + kind", "vars(T)", "inspect.getmembers(T)", "vars(T)", "T.__dict__", "vars(T)", "vars(T)",
    ]


def test_tensor_class_bases():
    from gradfix.analysis.facts import FileFacts
    from gradfix.analysis.positions import node_maps

    def subclasses(source):
        module = cst.parse_module(source)
        facts = FileFacts(module, node_maps(module))
        return [n.name.value if isinstance(n, cst.ClassDef) else module.code_for_node(n) for n in facts.tensor_subclasses]

    assert subclasses("import torch\nTT = torch.Tensor\nclass A(TT): pass\nclass B(A): pass\n") == ["A", "B"]
    assert subclasses("from torch import Tensor as Base\nclass A(Base): pass\n") == ["A"]
    assert subclasses("class A(make()): pass\nclass B(namedtuple('B', 'x')): pass\n") == ["A"]
    assert subclasses("def f(base):\n    class A(base): pass\n") == ["A"]
    assert subclasses("X = type('X', (object,), {})\nY = type(x)\n") == ["type('X', (object,), {})"]
    assert subclasses("import torch.nn as nn\nBase = nn.Module\nclass A(Base): pass\nclass B(Generic[T], A): pass\n") == []


def test_every_reference_is_a_use():
    from gradfix.analysis.backward import Backpropagators

    source = """import torch
def again():
    l.backward()
def f(again=1):
    (again if ok else g)()
    (again or g)()
    again.__call__()
    x = [y for y in (again,)]
    if cb is again:
        pass
    again()
    print(sep=again)
    h(again=1)
    obj.again
"""
    module = cst.parse_module(source)
    found = Backpropagators(module)
    function = module.body[2]
    shown = [module.code_for_node(n) for n in found.uses(function)]
    assert shown == ["again", "again", "again", "again", "again", "again()", "again"], shown
