"""Review round 14 (reviewer V, loops and the locals of `introspection._function_locals`): what round
13's proofs still missed.

Causes:
- `_function_locals` took a function's own variable named like a namespace reader (`vars`,
  `getmembers`) for a plain variable, whatever bound it; an import binds the reader itself
  (`from inspect import getmembers`: V_01; `from builtins import vars`: V_02), and so does a string
  given to `getattr` (`vars = getattr(builtins, "vars")`: V_03). Now a name an import in the function
  binds is never taken, nor a word the file spells as a string literal.
- GF005's reach of a method by a string knew `getattr`/`methodcaller`/`attrgetter` and the class
  namespace readers `__dict__`, `vars`, `getmembers`, `__getattribute__` only: `inspect` reads a
  namespace statically too (`getmembers_static`: V_04; `classify_class_attrs`, whose items hold the
  functions: V_05; `getattr_static(t, computed)`: V_06); code run from a string reaches any attribute
  (`eval("t.upd" + "ate")`: V_07; eval and exec counted only for module-level functions); a dotted
  path is resolved from a string (`pkgutil.resolve_name`: V_08; `pydoc.locate`) or a format field
  (`string.Formatter().get_field`: V_10); and a literal dotted path reaches its parts
  (`attrgetter("me.update")`: V_09; only a string equal to the name counted). Now
  `introspection._CLASS_NAMESPACES` holds the two `inspect` listings, `_STRING_RESOLVERS` any mention
  of the resolvers, and `_string_names` reads a dotted literal's parts. Modules that run code given
  as a string in a namespace handed to them (`timeit.timeit("t.upd" + "ate(h)", globals=...)`: V_28;
  `code`, `cProfile`, `pdb`, `runpy`, `doctest`): any import of one (`_CODE_RUNNER_MODULES`).
- `_reading_helpers` took a helper whose parameter is only an operand (`return u * k`) to return a
  new value; given a container (`_only_read`: `keep(bufs, 1)`), `*`, `+`, `-`, `&`, `^` and `|` make
  a container of the same items (V_12). Now `loops._fresh_operand` follows a chain of those operators
  to what it goes into, fresh only where that makes a new value (`torch.mean((u - v) ** 2)`).
- `bound_attribute_names` did not see an initializer called unbound, which sets its keywords as
  attributes of what it is given: `argparse.Namespace.__init__(Keeper, **{"__s" + "ub__": f})`
  (V_14) and `...(Keeper, __sub__=f)` (V_15) give a class of the file a special method. Now such a
  call (not `super().__init__(...)` nor `Base.__init__(self, ...)`: `introspection._self_init`) names
  its keywords, and a `**` mapping any name.
- `graph_free` took a call of any `torch.` path whose last name is a factory's for a new tensor:
  `torch.nn.init.eye(h)` is the deprecated alias of `eye_`, which returns `h`, graph and all (V_17).
  Now only torch's own (`torch.eye`), or a seeding or device function under any module
  (`loops._NO_TENSOR_FACTORIES`).
- `typing.ForwardRef` was on `_TYPING_ANY_USE`, but it evaluates its string as code:
  `ForwardRef("type")._evaluate(None, None, frozenset())` is `type` (V_19), and a `ForwardRef` is
  read back from a typing-made class's `__annotations__` (`typing.NamedTuple("Row", [("kind",
  "type")])`: V_20). Now off the list, and `_evaluate` (with `evaluate_forward_ref`, `_eval_type`)
  is one of `_CLASS_MAKERS`.
- A string annotation is code that library code evaluates: `functools.singledispatch`'s `register`
  runs `typing.get_type_hints` on `def _(x: "type")` and `registry` hands `type` back (V_21). Now
  `_classes_made_unseen` judges an annotation's string as the expression it spells
  (`loops._annotation_string_unseen`; a string built of parts, or no expression, is unproven).
- `_set_views_held` took a view given to any `_VIEW_READERS` builtin for one read and kept by none,
  but some return an argument: `min([], default={}.keys())` (V_23), `sum((), {}.keys())` (V_24), and
  `dict(k={}.keys())` keeps it (V_25). Now `loops._view_only_read`: a positional argument; `min`'s
  and `max`'s only one (`key=` allowed), `sum`'s only argument.
- The same helpers trusted a parameter as the receiver of any `FRESH_METHODS` name, but `add` on a
  set stores its argument (`def put(u): return u.add(box[0])`, given `bufs`: V_27). Now not the
  names of `COLLECTING_METHODS` (`loops._fresh_operand`).
V_11 keeps the reach: a local list named `vars`, and the method's name among words of a string.
V_13: a helper's gathering operators going on into a new value. V_16: `super().__init__(**kw)`,
`nn.Module.__init__(self)` and `argparse.Namespace(steps=3)`. V_18: `torch.eye`, `torch.zeros` and
`torch.random.manual_seed`. V_22: string annotations `"torch.Tensor"`, `"typing.Optional[int]"` and
a `singledispatch` registry of `int`. V_26: `max(d.items(), key=...)`, `sorted(d.keys(), reverse=True)`,
`min(d.keys())`, `dict(d.items())`.
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round14").glob("V_*.py"))
REACHED = "`update` may be reached by its name as a string ("
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"
CONTAINER = "is a container the function hands on (to another name or a call) before the loop reads it"

EXPECTED = {
    "V_01_gf005_local_import_of_getmembers_reaches_method": ("GF005", REACHED + "`getmembers` at line 21)"),
    "V_02_gf005_local_import_of_vars_builtin_reaches_method": ("GF005", REACHED + "`vars` at line 21)"),
    "V_03_gf005_local_bound_to_vars_by_string_reaches_method": ("GF005", REACHED + "`vars` at line 22)"),
    "V_04_gf005_getmembers_static_reaches_method": ("GF005", REACHED + "`inspect.getmembers_static` at line 22)"),
    "V_05_gf005_classify_class_attrs_reaches_method": ("GF005", REACHED + "`inspect.classify_class_attrs` at line 22)"),
    "V_06_gf005_getattr_static_computed_name_reaches_method": ("GF005", REACHED + "`inspect.getattr_static` at line 22)"),
    "V_07_gf005_eval_reaches_method": ("GF005", REACHED + "`eval` at line 21)"),
    "V_08_gf005_resolve_name_reaches_method": ("GF005", REACHED + "`pkgutil.resolve_name` at line 22)"),
    "V_09_gf005_attrgetter_dotted_literal_reaches_method": ("GF005", REACHED + '`"me.update"` at line 23)'),
    "V_10_gf005_format_field_reaches_method": ("GF005", REACHED + "`string.Formatter().get_field` at line 22)"),
    "V_11_gf005_local_list_and_prose_near_miss": ("GF005", None),
    "V_12_gf003_loop_reading_helper_returns_gathered_container": ("GF003", "`bufs` (line 6) " + CONTAINER),
    "V_13_gf003_loop_reading_helper_gathering_into_new_value_near_miss": ("GF003", None),
    "V_14_gf003_loop_namespace_init_sets_class_dunder_by_computed_keyword": ("GF003", "`buf` (line 20) " + TENSOR),
    "V_15_gf003_loop_namespace_init_sets_class_dunder_by_keyword": ("GF003", "`buf` (line 20) " + TENSOR),
    "V_16_gf003_loop_initializers_on_own_instance_near_miss": ("GF003", None),
    "V_17_gf003_loop_init_eye_alias_returns_argument": ("GF003", "`buf` (line 10) is built before the loop and read in it"),
    "V_18_gf003_loop_top_level_factories_near_miss": ("GF003", None),
    "V_19_gf003_loop_forward_ref_evaluates_to_type": ("GF003", "`buf` (line 14) " + TENSOR),
    "V_20_gf003_loop_named_tuple_annotation_evaluates_to_type": ("GF003", "`buf` (line 14) " + TENSOR),
    "V_21_gf003_loop_singledispatch_string_annotation_evaluates_to_type": ("GF003", "`buf` (line 26) " + TENSOR),
    "V_22_gf003_loop_string_annotations_near_miss": ("GF003", None),
    "V_23_gf003_loop_min_default_returns_key_view": ("GF003", "`buf` (line 10) " + TENSOR),
    "V_24_gf003_loop_sum_start_returns_key_view": ("GF003", "`buf` (line 10) " + TENSOR),
    "V_25_gf003_loop_dict_keyword_keeps_key_view": ("GF003", "`buf` (line 10) " + TENSOR),
    "V_26_gf003_loop_views_read_by_builtins_near_miss": ("GF003", None),
    "V_27_gf003_loop_reading_helper_set_add_stores_graph": ("GF003", "`bufs` (line 6) " + CONTAINER),
    "V_28_gf005_timeit_runs_method_from_string": ("GF005", REACHED + "`import timeit` at line 21)"),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _locals(source):
    import libcst as cst

    from gradfix.analysis.introspection import _CLASS_NAMESPACES, _function_locals

    module = cst.parse_module(source)
    taken = _function_locals(module, _CLASS_NAMESPACES)
    from gradfix.analysis.exprs import nodes_within

    return [n.value for n in nodes_within(module, cst.Name) if id(n) in taken]


def test_function_locals_bound_to_the_reader():
    assert _locals("def f(t):\n    vars = []\n    return vars\n") == ["vars", "vars"]
    assert _locals("def f(t, vars=None):\n    return vars\n") == ["vars", "vars"]
    for source in (
        "def f(t):\n    from builtins import vars\n    return vars(t)\n",
        "def f(t):\n    from inspect import getmembers\n    return getmembers(t)\n",
        "def f(t):\n    import inspect as getmembers\n    return getmembers\n",
        "import builtins\ndef f(t):\n    vars = getattr(builtins, 'vars')\n    return vars(t)\n",
        "def f(t, vars):\n    return vars(t)\ndef g(t):\n    import builtins\n    return f(t, getattr(builtins, 'vars'))\n",
    ):
        assert _locals(source) == [], source


def test_string_names():
    from gradfix.analysis.introspection import _string_names

    assert "update" in _string_names("me.update")
    assert "update" in _string_names("__main__:Trainer.update")
    assert "update" in _string_names("0.update")
    assert "update" in _string_names("update")
    assert "update" not in _string_names("update the weights")
    assert _string_names(None) == []


def test_reading_helpers_gathering_operators():
    import libcst as cst

    from gradfix.analysis.loops import _reading_helpers

    base = "import torch\n"
    for ok in (
        "def f(u, v):\n    return torch.mean((u - v) ** 2)\n",
        "def f(u, k):\n    return (u * k).sum()\n",
        "def f(u, v):\n    return -(u + v)\n",
        "def f(u):\n    return u.sum() + u.mean()\n",
    ):
        assert _reading_helpers(cst.parse_module(base + ok)) == {"f"}, ok
    for kept in (
        "def f(u, k):\n    return u * k\n",
        "def f(u, v):\n    return (u + v) * 2\n",
        "def f(u, v):\n    return (u - v)[0]\n",
        "def f(u):\n    return u.add(1)\n",
    ):
        assert not _reading_helpers(cst.parse_module(base + kept)), kept


def test_unbound_initializer_keywords():
    import libcst as cst

    from gradfix.analysis.introspection import bound_attribute_names

    def names(source):
        return bound_attribute_names(cst.parse_module(source), scopes=False)

    assert "__sub__" in names("import argparse\nargparse.Namespace.__init__(K, __sub__=f)\n")
    assert names("import argparse\nargparse.Namespace.__init__(K, **kw)\n") is None
    for ok in (
        "class A(B):\n    def __init__(self, **kw):\n        super().__init__(**kw)\n",
        "class A(B):\n    def __init__(self, **kw):\n        B.__init__(self, **kw)\n",
        "import argparse\nns = argparse.Namespace(**kw)\n",
    ):
        assert names(ok) == frozenset(), ok


def test_factories_of_torch_itself():
    import libcst as cst

    from gradfix.analysis.loops import graph_free

    for ok in ("torch.eye(3)", "torch.zeros(3)", "torch.cuda.manual_seed(0)", "torch.random.manual_seed(0)", "torch.cuda.device(0)"):
        assert graph_free(cst.parse_expression(ok)), ok
    for kept in ("torch.nn.init.eye(h)", "torch.nn.init.zeros(h)", "torch.distributed.tensor.ones(3)"):
        assert not graph_free(cst.parse_expression(kept)), kept


def test_forward_refs_evaluated():
    import libcst as cst

    from gradfix.analysis.loops import _classes_made_unseen

    base = "import typing\nimport torch\n"
    for extra in (
        "K = typing.ForwardRef('type')\n",
        "K = r._evaluate(None, None, frozenset())\n",
        "K = getattr(r, '_evaluate')\n",
    ):
        assert not _untrusted(base + extra).operators, extra
    assert _classes_made_unseen(cst.parse_module(base + "K = r._evaluate(None, None, frozenset())\n"))
    assert _untrusted(base + "K = typing.Optional[int]\n").operators


def _untrusted(source):
    import libcst as cst

    from gradfix.analysis.loops import _shadowed_builtins

    return _shadowed_builtins(cst.parse_module(source))


def test_annotation_strings_are_code():
    import libcst as cst

    from gradfix.analysis.loops import _classes_made_unseen

    for unseen in (
        'def f(x: "type"):\n    pass\n',
        'def f(x: "typing.Optional[\'type\']"):\n    pass\n',
        'def f(x: "ty" "pe"):\n    pass\n',
        'def f(x: f"type"):\n    pass\n',
        'x: "a b" = 1\n',
    ):
        assert _classes_made_unseen(cst.parse_module(unseen)), unseen
    for ok in (
        'def f(x: "torch.Tensor") -> "typing.Optional[int]":\n    pass\n',
        'def f(x: "typing.List[\'torch.Tensor\']"):\n    pass\n',
        'y = "type"\n',
    ):
        assert not _classes_made_unseen(cst.parse_module(ok)), ok


def test_views_returned_by_readers():
    base = "import torch\nd = {}\n"
    for ok in (
        "b = max(d.items(), key=lambda kv: kv[1])\n",
        "n = sorted(d.keys(), reverse=True)\n",
        "f = min(d.keys())\n",
        "c = dict(d.items())\n",
        "s = sum(d.keys())\n",
        "z = list(zip(d.keys(), d.items()))\n",
    ):
        assert not _untrusted(base + ok).set_views, ok
    for kept in (
        "v = min([], default=d.keys())\n",
        "v = max(d.keys(), d.items())\n",
        "v = sum((), d.keys())\n",
        "v = dict(k=d.keys())\n",
    ):
        assert _untrusted(base + kept).set_views, kept
