"""Review round 8 (reviewer Y, loops and GF004): what round 7's loop and GF004 proofs still missed.

Causes:
- A name bound to another name's object (`buf = x`, `m2 = m`, `buf = x.requires_grad_(False)`, which
  returns `x`; `seq = nn.Sequential(m)`, which holds `m`) was proven from the source's bindings
  alone: `_names_graph_free` did not count what is written into the source in place (`x.copy_(h)`,
  `m.b.copy_(h)`), nor whether the source is handed on (`v = x; v.copy_(h)`), and a name bound to a
  name was not checked as a tensor (`bv = buf[:]; bv.copy_(h)`) (Y_01..Y_04, Y_09, Y_10). Now a
  name within a value is proven only where its in-place updates are graph-free too and, where it
  holds a tensor, a torch object or a container, it is not handed on up to the loop's end, as a
  name the loop reads is (`buf = x` is a hand-on of `x`: a tensor, object or container under two
  names is not proven).
- `_tensor_read` took `F.relu(buf, inplace=True)` for a new value (it returns `buf`, Y_05), and
  builtins by name where the file defines one (`def abs(t): return t`, Y_06). Now a torch function
  given `inplace=`/`out=` or an in-place flag by position (`FUNCTIONAL_INPLACE_POSITION`) is not a
  new value, and a builtin the file may bind (`_shadowed_builtins`) is not trusted.
- A container's items were not followed: `t = bufs[0]; t.copy_(h)`, `for t in bufs: t.copy_(h)`
  (`_plain_use` took a subscript and iteration for reads, Y_07, Y_08). Now a container's reads are
  a torch object's (`_only_read`): items followed, a loop over it proven where its target is not
  handed on and what is written through it is graph-free (`_items_kept`: `for b in bufs:
  b.mul_(0.5)` stays proven).
- `_only_read` took a torch callable given an object for a read, whatever it returns:
  `nn.init.zeros_(m.b)` returns `m.b`, `torch.compile(m)` wraps `m` (Y_11, Y_12). Now its result is
  followed as a method's: thrown away, rebound to its own name, or bound to a name proven as its
  own (`model = nn.Sequential(enc, dec)`).
- GF004: `_scalar` took `x.mean()` for a full reduction by its name; a class of the file defining
  `mean` returns what it likes (Y_13). Now a method reduction counts only where the file binds no
  attribute of that name (`CalleeClassifier.may_bind_attribute`).
Y_14 and Y_15 keep the reach. Y_16 (found by `test_properties` after the merge): a container's item
handed to a loss (`F.mse_loss(v[0], y)`) had its result followed too, and a loss bound to a name
made the container unproven; a loss or a `FRESH_METHODS` function of torch is a new tensor
(`loops._fresh_torch_call`), holding nothing it was given; so is the result of a helper of the
file that only reads its parameters (`def loss_fn(u, v): return torch.mean((u - v) ** 2)`,
`loops._reading_helpers`; Y_17).
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round8").glob("Y_*.py"))
SHOWS = "shows whether `s_loss` requires grad: after the rewrite it carries the other term's gradient"
BUILT = "is built before the loop and read in it"
TENSOR = "is a tensor the function hands on (to another name or a call that may write into it) before the loop reads it"
OBJECT = "is an object the function hands on (to another name or a call that may store into it) before the loop reads it"
CONTAINER = "is a container the function hands on (to another name or a call) before the loop reads it"

EXPECTED = {
    "Y_01_gf003_loop_tensor_alias_source_written_in_place": ("GF003", "`buf` (line 11) " + BUILT),
    "Y_02_gf003_loop_tensor_alias_source_handed_on": ("GF003", "`buf` (line 11) " + BUILT),
    "Y_03_gf003_loop_tensor_alias_written_through_view": ("GF003", "`buf` (line 11) " + BUILT),
    "Y_04_gf003_loop_tensor_requires_grad_returns_source": ("GF003", "`buf` (line 11) " + BUILT),
    "Y_05_gf003_loop_tensor_functional_inplace_returns_input": ("GF003", "`buf` (line 11) " + TENSOR),
    "Y_06_gf003_loop_tensor_shadowed_builtin": ("GF003", "`buf` (line 13) " + TENSOR),
    "Y_07_gf003_loop_container_item_aliased": ("GF003", "`bufs` (line 10) " + CONTAINER),
    "Y_08_gf003_loop_container_iterated_and_written": ("GF003", "`bufs` (line 10) " + CONTAINER),
    "Y_09_gf003_loop_module_alias_source_written_in_place": ("GF003", "`m2` (line 13) " + BUILT),
    "Y_10_gf003_loop_module_in_container_written_in_place": ("GF003", "`seq` (line 13) " + BUILT),
    "Y_11_gf003_loop_init_returns_its_tensor": ("GF003", "`m` (line 11) " + OBJECT),
    "Y_12_gf003_loop_compiled_module_written": ("GF003", "`m` (line 11) " + OBJECT),
    "Y_13_gf004_fstring_reduction_method_of_file_class": ("GF004", "`{s_loss * z}` (line 34) " + SHOWS),
    "Y_14_gf003_loop_aliases_and_items_keep_safe_fix": ("GF003", None),
    "Y_15_gf004_fstring_reduction_method_keeps_safe_fix": ("GF004", None),
    "Y_16_gf001_loop_container_items_given_to_loss_keeps_safe_fix": ("GF001", None),
    "Y_17_gf001_loop_container_items_given_to_helper_keeps_safe_fix": ("GF001", None),
}

# Programs that patch torch or builtins (left patched): run in a process of their own.
APART: set = set()


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


def test_reading_helpers_are_those_that_only_read_their_parameters():
    import libcst as cst

    from gradfix.analysis.loops import _reading_helpers

    source = """
import torch
def a(u, v):
    return torch.mean((u - v) ** 2)
def b(u, v):
    return torch.abs(u - v).mean()
def c(u, v):
    return u
def d(u, v):
    keep.append(u)
    return u.sum()
def e(u, v):
    return put(u, v)
def f(u, v):
    return (u := v).sum()
def g(u, v):
    return u.view(-1).sum()
@dec
def h(u, v):
    return u * v
def i(u, v):
    return u[0] * v
def j(u, v):
    return F.relu(u, inplace=True).sum()
def k(u, v):
    return torch.mean(torch.abs(u - v))
def k(u, v):
    return u
def m(*u):
    return torch.sum(u)
"""
    assert sorted(_reading_helpers(cst.parse_module(source))) == ["a", "b"]
    # `u - v` of containers is a container of their items: fresh only where it goes on into a value
    # that `torch.abs` makes, which must then be torch's (review, round 14).
    assert sorted(_reading_helpers(cst.parse_module(source.replace("import torch\n", "")))) == ["a"]
    # A file that may bind names by a string (here `exec`) proves none.
    assert _reading_helpers(cst.parse_module(source + "exec('b = keep')\n")) == frozenset()
