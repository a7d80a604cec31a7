"""Review round 9 (reviewer U, loops): what round 8's loop proofs still missed.

Causes:
- `_items_kept` counted method updates and stores through a loop's target, not an augmented
  assignment: `for t in bufs: t += h` updates the item in place (`__iadd__`), and `_tensor_read`
  took it for a binding of `t` (U_01). Now its value must be a number or graph-free, as a store's.
- An operand of arithmetic, a comparison or a subscript was a new value whatever ran it:
  `Keeper() * buf` runs the file's `Keeper.__mul__`, which may return `buf` (U_02); so may the
  `u - v` of a helper that "only reads its parameters" given `Keeper()` (U_05). Now an operator
  makes a new value only where the file binds none of the special methods that receive an operand
  (`loops._OPERAND_DUNDERS`, `__torch_function__` included), as `bound_attribute_names` sees them;
  an index only where it binds no `__getitem__` (`Keeper()[buf]` may return `buf`, U_11; a
  `Dataset`'s `__getitem__` leaves operators proven, U_09).
- `_fresh_torch_call` trusted `torch.` / `F.` by their text: the file may patch `torch.mean` to
  return its argument (U_03, U_08 through a helper), or bind `F` to a class of its own (U_04). Now
  the first name must be bound only by imports of torch, and no part of the path (nor a tensor
  method taken for new, `buf.mean()`) an attribute name the file may store; a file that binds names
  by a string proves none (`loops._Untrusted`).
- A container or torch object read as an operand was taken for read only: `more = bufs + []` and
  `seq + nn.Sequential()` hold the same items (U_06, U_07). Now an operand of `+ * | & ^ -` is
  followed as what it holds (a list item may itself be a list).
- `_names_where_bound` (the module's stores into torch, optimizer arguments) proved names with
  every builtin trusted; it now passes the file's `_shadowed_builtins`.
U_09 and U_10 keep the reach.
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round9").glob("U_*.py"))
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"
OBJECT = "is an object the function hands on (to another name or a call that may store into it) before the loop reads it"
CONTAINER = "is a container the function hands on (to another name or a call) before the loop reads it"

EXPECTED = {
    "U_01_gf003_loop_item_updated_by_augmented_assignment": ("GF003", "`bufs` (line 10) " + CONTAINER),
    "U_02_gf003_loop_operator_of_file_class_returns_operand": ("GF003", "`buf` (line 15) " + TENSOR),
    "U_03_gf003_loop_patched_torch_function_returns_input": ("GF003", "`buf` (line 11) " + TENSOR),
    "U_04_gf003_loop_fresh_loss_name_bound_by_file": ("GF003", "`buf` (line 17) " + TENSOR),
    "U_05_gf003_loop_reading_helper_operand_of_file_class": ("GF003", "`bufs` (line 6) " + CONTAINER),
    "U_06_gf003_loop_container_concatenated_item_written": ("GF003", "`bufs` (line 10) " + CONTAINER),
    "U_07_gf003_loop_module_concatenated_item_written": ("GF003", "`seq` (line 11) " + OBJECT),
    "U_08_gf003_loop_reading_helper_of_patched_torch": ("GF003", "`bufs` (line 6) " + CONTAINER),
    "U_09_gf003_loop_operands_and_torch_names_keep_safe_fix": ("GF003", None),
    "U_10_gf001_loop_reading_helper_keeps_safe_fix": ("GF001", None),
    "U_11_gf003_loop_subscript_of_file_class_returns_index": ("GF003", "`buf` (line 15) " + TENSOR),
}

# Programs that patch torch (left patched): run in a process of their own.
APART = {"U_03_gf003_loop_patched_torch_function_returns_input", "U_08_gf003_loop_reading_helper_of_patched_torch"}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


def test_reading_helpers_need_torch_names_and_operators_proven():
    import libcst as cst

    from gradfix.analysis.loops import _reading_helpers

    source = """
import torch
import torch.nn.functional as F
def a(u, v):
    return torch.mean((u - v) ** 2)
def b(u, v):
    return F.mse_loss(u, v) + u.abs().mean()
def c(u):
    return torch.mean(u)
"""
    assert sorted(_reading_helpers(cst.parse_module(source))) == ["a", "b", "c"]
    # A class of the file with an operator that may receive a parameter (or a `__torch_function__`):
    # no operand and no torch call is proven new.
    keeper = "class K:\n    def __rsub__(self, other):\n        return other\n"
    assert _reading_helpers(cst.parse_module(source + keeper)) == frozenset()
    # torch's names patched or bound by the file: not torch's (`a` reads `u` only as an operand).
    assert sorted(_reading_helpers(cst.parse_module(source + "torch.mean = lambda t: t\n"))) == ["a", "b"]
    assert sorted(_reading_helpers(cst.parse_module(source + "F = object()\n"))) == ["a", "c"]
    assert sorted(_reading_helpers(cst.parse_module(source + "setattr(torch, 'mean', print)\n"))) == ["a", "b"]
    # A patched name elsewhere leaves the others proven.
    assert sorted(_reading_helpers(cst.parse_module(source + "torch.sum = lambda t: t\n"))) == ["a", "b", "c"]
