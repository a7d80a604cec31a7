"""Review round 3, reviewer H: safe GF003/GF005 fixes in loops and on losses that leave the call.

Causes, each now making the fix unsafe (or, for GF005 in a loop, the finding not reported:
retaining may be the point there):

- A name the loop body binds was taken as new in each iteration. It is one only when bound before
  every read of it on every path through the body (`loops._fresh_in_each_iteration`); bound under
  an `if` (a refresh every k steps) or after its read (`h_prev = h` at the end), it carries the
  previous iteration's graph (H_01 to H_04).
- `loops.graph_free` took any capitalised `torch.*` class built as graph-free: now only optimizers
  and schedulers, the classes of `torch.nn` itself but its losses, and a few settings objects;
  any other class (`torch.utils.data.TensorDataset(feats, y)`) only when its arguments are
  (H_05, H_06). A dict display's keys are checked with its values (H_07). The functions and
  lambdas a loop reads carry what they read from around them and their defaults
  (`loops._add_closure_reads`, H_08).
- GF005 trusted `x.train(...)`, `x.eval(...)`, `x.parameters(...)` ... whatever their arguments
  (H_09: a method of the file named `train` keeps the loss); an `assert`'s message and a `raise`'s
  exception carry a tensor out of the call (H_10); `isinstance` runs a metaclass
  `__instancecheck__` of the file (H_11).
"""

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round3").glob("H_*.py"))

EXPECTED = {
    "H_01_gf005_loop_refresh_every_k": None,
    "H_02_gf003_loop_refresh_every_k": ("GF003", "`feats` is not bound afresh before every read of it in an iteration"),
    "H_03_gf005_loop_read_before_bind_prev_step": None,
    "H_04_gf003_loop_read_before_bind_prev_step": ("GF003", "`h_prev` is not bound afresh before every read of it"),
    "H_05_gf003_loop_over_tensordataset": ("GF003", "iterates over `ds`"),
    "H_06_gf005_main_loop_over_tensordataset": ("GF005", "`ds` comes into the loop from before it"),
    "H_07_gf005_loop_over_dict_with_tensor_keys": None,
    "H_08_gf003_loop_closure_reads_graph": ("GF003", "`h` (line 10) is built before the loop"),
    "H_09_gf005_method_named_train_keeps_loss": ("GF005", "`self.train()` (line 16) is not proven"),
    "H_10_gf005_assert_message_carries_loss": ("GF005", "the message of `assert` (line 12)"),
    "H_11_gf005_isinstance_metaclass_keeps_loss": ("GF005", "`isinstance()` (line 24) is not proven"),
}


def test_every_case_has_an_expectation():
    assert sorted(path.stem for path in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])
