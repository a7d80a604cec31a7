"""Review round 10 (reviewer S, loops): what round 9's operator proofs still missed.

Causes:
- Round 9 proved an operator, a comparison or a subscript given a tensor makes a new value where
  the file binds none of the special methods that receive an operand (`loops._OPERAND_DUNDERS`,
  round 9's `_INDEX_DUNDERS`). An object of an imported class has such methods the file never binds: a
  `unittest.mock.MagicMock` whose `__mul__` (S_01), `__rsub__` (S_02, the fallback of `buf -
  keeper`) or `__getitem__` (S_03) has a side effect returning its argument, or whose `__lt__`
  records it in `call_args` (S_04); `collections.UserList() + buf` holds `list(buf)`, views of its
  rows; a class of another module of the project may do any of this. Now operators (and so fresh
  tensor methods and torch calls, which an argument's `__torch_function__` may answer)
  are proven only where every module the file imports is one of `loops._OPERAND_MODULES` (torch,
  numpy and standard modules with no class that keeps an operand); a relative import never is.
- `_Untrusted.stored` (the attribute names the file may store, so that `torch.mean` may be patched)
  missed argparse: `parser.parse_args(["--mean", "1"], namespace=torch)` stores each option's
  value on the namespace given as the attribute its `dest` names, a string (S_06). Now
  `introspection.bound_attribute_names` proves no name where a parse method is given more than its
  `args`, nor where `functools.update_wrapper`, or `wraps` other than as a decorator, copies one
  object's `__dict__` onto another.
- An index was proven a new value where the file bound none of `_INDEX_DUNDERS`, but the
  subscripted object's `__getitem__`/`__class_getitem__` need not be the file's: `list[buf]` is a
  `GenericAlias` keeping `buf` in `__args__` (S_08, no import at all), `np.s_[buf]` is `buf`
  (S_09), `typing.Literal[buf]` keeps it (S_10). No text proves what is subscripted: an index is
  now always handed on (the corpus and fixtures lost no safe fix by it).
S_05 and S_07 keep the reach: a file importing only such modules; argparse's plain parse and
`@functools.wraps(f)`.
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round10").glob("S_*.py"))
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"

EXPECTED = {
    "S_01_gf003_loop_operator_of_imported_mock_returns_operand": ("GF003", "`buf` (line 12) " + TENSOR),
    "S_02_gf003_loop_reflected_operator_of_imported_mock": ("GF003", "`buf` (line 12) " + TENSOR),
    "S_03_gf003_loop_subscript_of_imported_mock_returns_index": ("GF003", "`buf` (line 12) " + TENSOR),
    "S_04_gf003_loop_comparison_recorded_by_imported_mock": ("GF003", "`buf` (line 12) " + TENSOR),
    "S_05_gf003_loop_operands_with_allowed_imports_keep_safe_fix": ("GF003", None),
    "S_06_gf003_loop_torch_patched_by_argparse_namespace": ("GF003", "`buf` (line 15) " + TENSOR),
    "S_07_gf003_loop_argparse_plain_parse_keeps_safe_fix": ("GF003", None),
    "S_08_gf003_loop_index_kept_by_builtin_class_subscription": ("GF003", "`buf` (line 10) " + TENSOR),
    "S_09_gf003_loop_index_returned_by_numpy_index_expression": ("GF003", "`buf` (line 11) " + TENSOR),
    "S_10_gf003_loop_index_kept_by_typing_literal": ("GF003", "`buf` (line 12) " + TENSOR),
}

# Programs that patch torch (left patched): run in a process of their own.
APART = {"S_06_gf003_loop_torch_patched_by_argparse_namespace"}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


def test_operators_need_every_import_proven():
    import libcst as cst

    from gradfix.analysis.loops import _reading_helpers, _shadowed_builtins

    source = """
import math
import numpy as np
import torch
import torch.nn.functional as F
def a(u, v):
    return torch.mean((u - v) ** 2)
def b(u, v):
    return F.mse_loss(u, v) + u.abs().mean()
"""
    assert sorted(_reading_helpers(cst.parse_module(source))) == ["a", "b"]
    assert _shadowed_builtins(cst.parse_module(source)).operators
    # An import of a module whose objects may keep an operand: nothing proven by operators.
    for extra in ("from unittest import mock\n", "import collections\n", "from . import keeper\n", "from model import Net\n", "import wandb, math\n"):
        module = cst.parse_module(extra + source)
        untrusted = _shadowed_builtins(module)
        assert not untrusted.operators, extra
        assert _reading_helpers(module) == frozenset(), extra
    # Nested or aliased imports of proven modules leave them proven.
    nested = source + "def c():\n    import random as rnd\n    from os import path\n    return rnd.random()\n"
    assert _shadowed_builtins(cst.parse_module(nested)).operators


def test_attribute_names_stored_by_argparse_and_wrappers():
    import libcst as cst

    from gradfix.analysis.introspection import bound_attribute_names

    def names(source):
        return bound_attribute_names(cst.parse_module(source))

    assert names("p.parse_args()\np.parse_args(args=[])\np.parse_known_args(['a'])\n") == frozenset()
    for source in ("p.parse_args([], ns)\n", "p.parse_args(namespace=ns)\n", "p.parse_known_args(*a)\n", "functools.update_wrapper(torch, ns)\n", "wraps(ns)(torch)\n"):
        assert names(source) is None, source
    assert names("import functools\ndef deco(f):\n    @functools.wraps(f)\n    def g(*a):\n        return f(*a)\n    return g\n") is not None
