"""Review round 7 (reviewer W, loops and GF004): what round 6's loop and GF004 proofs still missed.

Causes:
- A tensor bound before the loop to a graph-free value (`buf = torch.zeros(3)`) and written into
  through another name: a view bound to a name (`bv = buf[:]`, `bv = buf.view(-1)`; a subscript or a
  method call on `buf` was taken as a read), a special method (`buf.__iadd__(h)`: no `_` suffix, not
  an in-place update), and in the loop an alias (`v = buf; v.copy_(out)`) or a call given it
  (`operator.iadd(buf, out)`): the handing on was checked only before the loop (W_01..W_05). Now
  every read of such a tensor, up to the end of the loop, must be one `loops._tensor_read` proves
  makes no alias of it: followed through views and in-place updates to a new value (arithmetic,
  `FRESH_METHODS`, `.detach()`, a reading builtin, a `FRESH_METHODS` torch function) or a
  discarded one; a call of a torch module object (`lin(buf)`) has its result followed in turn, since
  it may return its input. A module of the file given the tensor (whose `forward` may write into it)
  is a call like any other: not proven (round 6's known `model(x)` item; a module of the file is not
  proven graph-free anyway, so no safe fix came of it, unexecuted).
- The same through a torch object (`bv = m.b.view(-1); bv.copy_(h)`: a method called on a part of it
  was taken as a read; now its result is followed as `_tensor_read` follows a tensor's, W_12), and
  through the tensor a copy method may return as it is (`buf = x.float()` is `x`, handed on as
  `v = x; v.copy_(h)`; `loops._copied_from`, W_13). W_11 and W_14 keep the reach.
- A torch object's own methods were taken as reads whatever they return: `m.buffers()` hands out its
  buffers (`for b in m.buffers(): b.copy_(h)`, W_16), `m.train()` the module itself (`m2 = m.train();
  m2.b.copy_(h)`, W_17). Now a method's result is followed (`_only_read` -> `_tensor_read` with
  `holder`): discarded, rebound to its own name (`model = model.to(device)`), handed to an optimizer
  (`list(a.parameters()) + list(b.parameters())`), or a fresh value; `zero_grad()` and `step()` return
  none of its tensors; a `for` loop over them whose body only switches `requires_grad` with literals
  (`for p in head.parameters(): p.requires_grad_(False)`, `_only_switches_grad`). W_18 keeps the reach.
- GF004: an f-string formats only a 0-dim tensor as a number; any other shape (`f"{s_loss.view(1)}"`,
  `f"{s_loss * torch.ones(2)}"`), the builtin `format` of one, and `f"{s_loss=}"` (a repr) show its
  autograd state (W_06..W_09). A plain `{x}` or `format(x)` is now a value read only where `x` is proven
  0-dim (`_scalar`: numbers, arithmetic on them, full reductions, names bound only so); a literal
  format spec (`:.3f`) formats a number or raises alike (W_10 keeps the reach). A name proven 0-dim by
  its bindings may still be made 1-dim in place under another name or by a call given it
  (`grow(z)`: `t.unsqueeze_(0)`, W_15): only names read as operands, by reading builtins or by
  methods that keep no reference to them count (`_handed_names`).
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round7").glob("W_*.py"))
SHOWS = "shows whether `s_loss` requires grad: after the rewrite it carries the other term's gradient"
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"

EXPECTED = {
    "W_01_gf003_loop_tensor_written_through_view": ("GF003", "`buf` (line 10) " + TENSOR),
    "W_02_gf003_loop_tensor_view_method_alias": ("GF003", "`buf` (line 10) " + TENSOR),
    "W_03_gf003_loop_tensor_iadd_dunder": ("GF003", "`buf` (line 10) " + TENSOR),
    "W_04_gf003_loop_tensor_aliased_in_loop": ("GF003", "`buf` (line 10) " + TENSOR),
    "W_05_gf003_loop_tensor_operator_iadd_in_loop": ("GF003", "`buf` (line 11) " + TENSOR),
    "W_06_gf004_fstring_of_view_of_carrier": ("GF004", "`{s_loss.view(1)}` (line 25) " + SHOWS),
    "W_07_gf004_format_builtin_of_view_of_carrier": ("GF004", "`format(s_loss.view(1))` (line 25) " + SHOWS),
    "W_08_gf004_fstring_debug_specifier_of_carrier": ("GF004", "`{s_loss=}` (line 25) " + SHOWS),
    "W_09_gf004_fstring_of_broadcast_carrier": ("GF004", "`{s_loss * torch.ones(2)}` (line 25) " + SHOWS),
    "W_10_gf004_number_formats_of_carrier_keep_safe_fix": ("GF004", None),
    "W_11_gf003_loop_tensor_reads_keep_safe_fix": ("GF003", None),
    "W_12_gf003_loop_buffer_written_through_view": ("GF003", "`m` (line 11) is an object the function hands on"),
    "W_13_gf003_loop_tensor_is_its_source": ("GF003", "`buf` (line 11) may be `x` itself, a tensor the function hands on"),
    "W_14_gf003_loop_object_and_copy_reads_keep_safe_fix": ("GF003", None),
    "W_15_gf004_fstring_operand_reshaped_by_helper": ("GF004", "`{s_loss * z}` (line 31) " + SHOWS),
    "W_16_gf003_loop_buffers_iterated_and_written": ("GF003", "`m` (line 11) is an object the function hands on"),
    "W_17_gf003_loop_module_returned_by_train": ("GF003", "`m` (line 11) is an object the function hands on"),
    "W_18_gf003_loop_module_methods_keep_safe_fix": ("GF003", None),
}

# Programs that patch torch or builtins (left patched): run in a process of their own.
APART: set = set()


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)
