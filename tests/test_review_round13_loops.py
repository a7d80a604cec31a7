"""Review round 13 (reviewer T, loops): what round 12's proofs of operators and of a loop's fresh
names still missed.

Causes:
- A mapping's key and item views are sets whose `-`, `^` and `&` take any iterable as the other
  operand and make a set of its items; of a tensor, its rows, views of its storage: `{}.keys() ^
  buf` (T_01), `buf - nn.ModuleDict().keys()` (T_02: the tensor's `__sub__` gives way to the view's).
  No import and no special method of the file is needed. Now those three operators prove their
  operand fresh only where the file keeps no view (`loops._set_views_held`): every `keys`/`items`
  it names is called and its result at once iterated, tested with `in` or read by a builtin from
  `loops._VIEW_READERS`; a string `"keys"`/`"items"` (`getattr(d, "keys")`) is a view kept.
- `typing.get_origin`, `get_args` and `get_type_hints` read classes back out of annotation objects
  as `__origin__` does: `typing.get_origin(typing.Type[int])` is `type`, which makes a class from a
  namespace (`dict(__sub__=f)`, a keyword no check reads as a special name: T_03). Now off
  `loops._TYPING_ANY_USE`.
- `_classes_made_unseen` read special names as literal strings only: `getattr(int, "__cl" +
  "ass__")` (T_04) and `getattr(int, "__cl" "ass__")` (T_05, two strings neither special) are
  `type`. Now a `getattr` is proven only called with a literal string as the name
  (`_classes_made_unseen._named_getattr`), and never handed on.
- `_fresh_in_each_iteration` took `feats: torch.Tensor` (an annotation with no value) for a binding
  in each iteration; it binds nothing (T_06). Now `_reads_and_binds` counts an annotated name bound
  only with a value.
- `package_names`' table let any name past a listed module through that was no module and no
  metaclass: a class of another package re-exported passed as torch's. `torch.amp.grad_scaler.Enum`
  is `enum.Enum`, whose call with a mapping makes a class (`{"__s" + "ub__": f, "a": 1}`: T_08);
  `torch.nn.modules.utils.repeat` is `itertools.repeat`, taken for torch's fresh `repeat` by its last
  name (`next(repeat(buf))` is `buf`: T_10);
  `torch.nn.modules.module.Mapping` is `collections.abc.Mapping`. Now `tools/package_names.py`
  also refuses a class or value (not a function) of another package (`_foreign`), and a class whose
  metaclass's `__call__` is not `type`'s or pybind11's (`_class_making_call`); the table regenerated.
- Unary `+` on a tensor is `torch.positive`, which returns the tensor itself: `v = +buf` (T_11). Now
  of the unary operators only `-`, `~` and `not` prove their operand fresh (`_operator_trusted`).
T_07 keeps the reach: views iterated, tested with `in` and sorted, `getattr(d, "get")`, an
annotated binding with a value, and `-`, `^` on the tensors. T_09: torch's and numpy's own classes
and functions through their modules (`torch.nn.modules.module.Module`, `np.random.default_rng`).
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round13").glob("T_*.py"))
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"
STALE = "`feats` is not bound afresh before every read of it in an iteration"

EXPECTED = {
    "T_01_gf003_loop_dict_keys_xor_keeps_operand": ("GF003", "`buf` (line 10) " + TENSOR),
    "T_02_gf003_loop_mapping_keys_rsub_keeps_operand": ("GF003", "`buf` (line 10) " + TENSOR),
    "T_03_gf003_loop_type_reached_by_typing_get_origin": ("GF003", "`buf` (line 14) " + TENSOR),
    "T_04_gf003_loop_type_reached_by_computed_getattr": ("GF003", "`buf` (line 14) " + TENSOR),
    "T_05_gf003_loop_type_reached_by_concatenated_string_getattr": ("GF003", "`buf` (line 14) " + TENSOR),
    "T_06_gf003_loop_bare_annotation_taken_for_binding": ("GF003", STALE),
    "T_07_gf003_loop_consumed_views_literal_getattr_annotated_binding_near_miss": ("GF003", None),
    "T_08_gf003_loop_enum_reexported_by_torch_makes_class": ("GF003", "`buf` (line 11) " + TENSOR),
    "T_09_gf003_loop_package_own_classes_near_miss": ("GF003", None),
    "T_10_gf003_loop_itertools_repeat_reexported_as_fresh_torch_call": ("GF003", "`buf` (line 10) " + TENSOR),
    "T_11_gf003_loop_unary_plus_returns_operand": ("GF003", "`buf` (line 10) " + TENSOR),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _untrusted(source):
    import libcst as cst

    from gradfix.analysis.loops import _shadowed_builtins

    return _shadowed_builtins(cst.parse_module(source))


def test_set_views_kept():
    import libcst as cst

    from gradfix.analysis.loops import _operator_trusted

    base = "import torch\nd = {}\n"
    for ok in (
        "for k, v in d.items():\n    print(k)\n",
        "x = [k for k in d.keys()]\n",
        "y = 'a' in d.keys() or 'b' not in d.keys()\n",
        "z = sorted(d.keys()), len(d.items()), list(d.items())\n",
        "e = d.get('a')\n",
    ):
        shadowed = _untrusted(base + ok)
        assert not shadowed.set_views, ok
        for op in ("a - b", "a ^ b", "a & b", "a * b"):
            assert _operator_trusted(cst.parse_expression(op), shadowed), (ok, op)
    for kept in (
        "v = d.keys()\n",
        "v = d.items() ^ set()\n",
        "f = d.keys\n",
        "v = getattr(d, 'items')()\n",
        "v = dict.keys(d)\n",
        "v = [d.keys()]\n",
        "def f():\n    return d.keys()\n",
        "def sorted(v):\n    return v\nv = sorted(d.keys())\n",  # (not the builtin)
    ):
        shadowed = _untrusted(base + kept)
        assert shadowed.set_views, kept
        for op in ("a - b", "a ^ b", "a & b"):
            assert not _operator_trusted(cst.parse_expression(op), shadowed), (kept, op)
        assert _operator_trusted(cst.parse_expression("a * b"), shadowed), kept


def test_getattr_names():
    base = "import torch\nd = {}\n"
    assert _untrusted(base + "g = getattr(d, 'get')\nh = getattr(d, 'get', None)\n").operators
    for extra in (
        "K = getattr(int, '__cl' + 'ass__')\n",
        "K = getattr(int, '__cl' 'ass__')\n",
        "K = getattr(int, f'__{\"class\"}__')\n",
        "name = 'x'\nK = getattr(int, name)\n",
        "g = getattr\n",
        "K = getattr(*(int, 'real'))\n",
    ):
        assert not _untrusted(base + extra).operators, extra


def test_class_namespace_by_computed_key():
    """A class's namespace read by a computed key may be any special name (lead, after T's suspicion):
    `_classes_made_unseen`; a literal key is read as a string, an instance's own `self.__dict__` holds none."""
    import libcst as cst

    from gradfix.analysis.loops import _classes_made_unseen

    base = "import typing\nimport torch\n"
    for extra in (
        "K = typing.Type[int].__dict__['__ori' + 'gin__']\n",
        "K = vars(typing.Type[int])['__ori' 'gin__']\n",
        "k = 'x'\nK = int.__dict__[k]\n",
        "class A:\n    def f(cls, k):\n        return cls.__dict__[k]\n",
    ):
        assert _classes_made_unseen(cst.parse_module(base + extra)), extra
        assert not _untrusted(base + extra).operators, extra
    for extra in (
        "K = vars(typing)['List']\n",
        "class A:\n    def f(self, k):\n        return self.__dict__[k]\n",
    ):
        assert not _classes_made_unseen(cst.parse_module(base + extra)), extra


def test_typing_reads_classes_back():
    base = "import typing\nimport torch\n"
    assert _untrusted(base + "T = typing.TypeVar('T')\nx = typing.cast(int, 1)\n").operators
    for extra in (
        "K = typing.get_origin(typing.Type[int])\n",
        "K = typing.get_args(typing.List[int])\n",
        "def f(x: 'type'):\n    pass\nK = typing.get_type_hints(f)\n",
        "from typing import get_origin\n",
    ):
        assert not _untrusted(base + extra).operators, extra


def test_reexports_refused():
    from gradfix.analysis.package_names import REFUSED

    assert "Enum" in REFUSED["torch.amp.grad_scaler"]
    assert "Mapping" in REFUSED["torch.nn.modules.module"] and "OrderedDict" in REFUSED["torch.nn.modules.module"]
    assert "Module" not in REFUSED["torch.nn.modules.module"]
    assert "repeat" in REFUSED["torch.nn.modules.utils"]  # (`itertools.repeat`)
    assert "default_rng" not in REFUSED["numpy.random"]  # (a Cython function: numpy's own)
    assert "Tensor" not in REFUSED["torch"] and "ModuleDict" not in REFUSED["torch"]  # (pybind11's call makes an instance)
    base = "import torch\n"
    assert _untrusted(base + "K = torch.nn.modules.module.Module\n").operators
    for extra in ("K = torch.amp.grad_scaler.Enum\n", "K = torch.nn.modules.module.Mapping\n"):
        assert not _untrusted(base + extra).operators, extra


def test_unary_plus_returns_its_operand():
    import libcst as cst

    from gradfix.analysis.loops import _operator_trusted

    shadowed = _untrusted("import torch\n")
    assert not _operator_trusted(cst.parse_expression("+a"), shadowed)
    for op in ("-a", "~a", "not a", "a * b", "a - b", "a < b"):
        assert _operator_trusted(cst.parse_expression(op), shadowed), op
