"""Wrong safe GF004 fixes a third review found and executed (reviewer I), each kept as a reproducer
in `tests/review_round3/I_*.py`.

- A builtin the expansion reads by its text (`sum(...)`, `range`, `len`, `float`...) that the file
  rebinds (`def sum(xs)`), or may rebind through the `builtins` module or a star import.
- Comprehensions fused although their iterations were read through an attribute (`range(cfg.n)`,
  `cfg.n` a property that grows on each read): bounds must be read from names only, as for fused
  `for` loops.
- A list whose length the expansion takes for the loop's iteration count, appended to through
  another name of the same list after the loop (`pad = s_list; ...; pad.append(...)`).
- A coefficient cancelled in the ratio that changes between its two uses: a call of the file that
  takes its root (`anneal(cfg)`), a store through another name of its root (`sched.k = ...`), a
  method call through another name of the list whose `len(...)` it is (`log.append(2)`).
- A read of the carrier (`s_loss.numpy()`) that depends on whether it requires grad: after the fix
  it carries the other operand's gradient, where the original did not.

Each used to get a safe fix that changed a gradient or made the program raise. Now each gets an
unsafe fix whose reason names the cause (or no finding, where the pattern is not there); the
unsafe rewrite prints something else or raises.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round3").glob("I_*.py"))
# None: no finding; (code, text of the unsafe reason); or (code, None): a safe fix, executed exact.
EXPECTED = {
    "I_01_comprehension_range_property": ("GF004", "TODO"),
    "I_02_stacked_list_appended_through_alias": ("GF004", "TODO"),
    "I_03_sum_shadowed_by_file_function": ("GF004", "the file binds `sum`, which gradfix reads as the builtin"),
    "I_04a_coefficient_changed_by_call_between_uses": ("GF004", "TODO"),
    "I_04b_coefficient_changed_through_alias": ("GF004", "TODO"),
    "I_04c_len_coefficient_list_appended_through_alias": ("GF004", "TODO"),
    "I_05_numpy_read_on_carrier_raises": ("GF004", "TODO"),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])
