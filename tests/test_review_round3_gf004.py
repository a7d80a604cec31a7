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
    "I_01_comprehension_range_property": ("GF004", "the comprehensions iterate `range(cfg.n)` (line 32), which reads `cfg.n`"),
    "I_02_stacked_list_appended_through_alias": ("GF004", "list `s_list` is read (line 21) other than by its append in the loop and its reduction"),
    "I_03_sum_shadowed_by_file_function": ("GF004", "the file binds `sum`, which gradfix reads as the builtin"),
    "I_04a_coefficient_changed_by_call_between_uses": ("GF004", "`anneal()` between the uses of coefficient `cfg.k` (lines 32 to 34) may change it"),
    "I_04b_coefficient_changed_through_alias": ("GF004", "coefficient `cfg.k` may change between its uses (lines 29 to 31): `sched` is rebound"),
    "I_04c_len_coefficient_list_appended_through_alias": ("GF004", "coefficient `len(seen)` may change between its uses (lines 24 to 26): `log.append()` modifies an operand"),
    "I_05_numpy_read_on_carrier_raises": ("GF004", "`s_loss.numpy()` (line 26) raises where `s_loss` requires grad"),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _reasons(src: str):
    from tests.test_field_cases import _lint

    return [(f.fixable, f.fix.unsafe_reason if f.fix is not None else None) for f in _lint(src, ["GF004"]).findings]


def _case(stem: str) -> str:
    return (Path(__file__).parent / "review_round3" / f"{stem}.py").read_text()


@pytest.mark.parametrize(
    "stem, old, new",
    [
        # Without the cause, each is the plain pattern again: a safe fix (the reach kept).
        ("I_03_sum_shadowed_by_file_function", "def sum(xs):", "def total(xs):"),
        ("I_01_comprehension_range_property", "range(cfg.n)", "range(len(series))"),
        ("I_04a_coefficient_changed_by_call_between_uses", "    anneal(cfg)\n", ""),
        ("I_04b_coefficient_changed_through_alias", "    sched.k = 2 * sched.k\n", ""),
        ("I_04c_len_coefficient_list_appended_through_alias", "    log.append(2)\n", "    print(len(log))\n"),
        ("I_02_stacked_list_appended_through_alias", "    pad.append(torch.zeros(()))  # s_list now holds 6 items, p_list 5\n", ""),
        ("I_05_numpy_read_on_carrier_raises", "s_loss.numpy()", "s_loss.item()"),
    ],
)
def test_without_the_cause_the_fix_is_safe(stem, old, new):
    src = _case(stem)
    assert old in src
    if stem.startswith("I_02"):
        src = src.replace("    pad = s_list  # the same list object\n", "")
    assert _reasons(src.replace(old, new)) == [(True, "")] or _reasons(src.replace(old, new)) == [(True, None)]


def test_builtins_module_written():
    src = _case("I_03_sum_shadowed_by_file_function").replace("def sum(xs):", "def total(xs):")
    src = src.replace("def step():", "builtins.sum = total\n\n\ndef step():")
    [(fixable, reason)] = _reasons(src)
    assert not fixable and "the file may rebind builtins" in reason


def test_coefficient_list_passed_to_a_call():
    # `keep(seen)`: a function of the file may append to the list whose length is the coefficient.
    src = _case("I_04c_len_coefficient_list_appended_through_alias").replace("    log.append(2)\n", "    keep(seen)\n")
    src = src.replace("def step():", "def keep(xs):\n    xs.append(1)\n\n\ndef step():")
    [(fixable, reason)] = _reasons(src)
    assert not fixable and "`len(seen)`" in reason


def test_reduced_list_declared_global():
    # Another function may append to a module's list by its name, where no read here shows it.
    src = _case("I_02_stacked_list_appended_through_alias").replace("    pad = s_list  # the same list object\n", "    global s_list\n")
    src = src.replace("    pad.append(torch.zeros(()))  # s_list now holds 6 items, p_list 5\n", "")
    [(fixable, reason)] = _reasons(src)
    assert not fixable and "list `s_list` is declared `global`" in reason


def test_coefficient_changed_inside_one_statement():
    # Both uses in one statement, a call of the file between them (read left to right).
    src = _case("I_04a_coefficient_changed_by_call_between_uses").replace("    c.k = 2 * c.k\n", "    c.k = 2 * c.k\n    return 0.0\n")
    src = src.replace("    loss1 = rec - cfg.k * s_loss\n    anneal(cfg)\n    loss2 = rec + cfg.k * p_loss\n", "")
    src = src.replace(
        "    loss1.backward(retain_graph=True)\n    loss2.backward()\n", "    (rec - cfg.k * s_loss + anneal(cfg) + rec + cfg.k * p_loss).backward()\n"
    )
    src = src.replace('    print("loss", loss1.item(), loss2.item())\n', "")
    [(fixable, reason)] = _reasons(src)
    assert not fixable and "`anneal()` between the uses of coefficient `cfg.k` (line " in reason


def test_coefficient_uses_around_the_first_backward():
    # `loss1.backward(...)` between the uses: the losses are read before their backward runs.
    src = _case("I_04a_coefficient_changed_by_call_between_uses")
    src = src.replace("    loss1.backward(retain_graph=True)\n    loss2.backward()\n", "    loss2.backward()\n")
    src = src.replace("    anneal(cfg)\n", "    loss1.backward(retain_graph=True)\n")
    assert _reasons(src) == [(True, "")]
