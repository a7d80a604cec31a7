"""Review round 10 (reviewer T): merges of backward passes, holes left after round 9.

Causes:
- `str.format` reads the attributes its template's replacement fields name (`"{0.gnorm:.4f}"`) by
  `getattr`, with no attribute node gradfix sees: between the passes (`format` is a harmless method)
  and in a special method (`_reads_computed`), a property of the file whose getter reads `w.grad`
  ran unseen (T_01 to T_03). Now a `.format` call is harmless only where the file computes no
  attribute, or its literal template names none it computes (`facts.formats_computed`; a template
  gradfix does not read, `FMT.format(m)`, may name any), and a special method's literal templates'
  fields count as reads.
- `__class_getitem__` and `__set_name__` were taken as special methods called by name, checked where
  they are called, but `M[0]` and a class body holding an instance made before (`class K: d = dd`)
  run them with no call (T_04, T_05). Now they are implicit special methods (`_CALLED_DUNDERS`).
- `sorted`/`min`/`max` were harmless whatever `key=` they are given, and call it: a function of the
  file or a lambda (whose body the scanner does not walk) reading `w.grad` (T_06, T_07). Now harmless
  only with a key that runs no code of the file and reads no attribute (`between._inert_key`).

Near misses that stay safe and exact: keys of names, subscripts and operators, and builtin keys
(T_08); a template naming no computed attribute in a file with a property (T_09).
"""
from pathlib import Path

import libcst as cst
import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round10").glob("T_*.py"))

_DUNDER = "runs without a call by name"
_BETWEEN = "between the backward calls may step, zero or read gradients"
EXPECTED = {
    "T_01_gf003_format_template_field_reads_property": ("GF003", f'`"{{0.gnorm:.4f}}".format()` {_BETWEEN}'),
    "T_02_gf003_format_template_in_variable_reads_property": ("GF003", f"`FMT.format()` {_BETWEEN}"),
    "T_03_gf003_dunder_format_template_reads_property": ("GF003", f"`__str__` (line 12) {_DUNDER}"),
    "T_04_gf003_class_getitem_reads_grad": ("GF003", f"`__class_getitem__` (line 8) {_DUNDER}"),
    "T_05_gf003_set_name_reads_grad": ("GF003", f"`__set_name__` (line 8) {_DUNDER}"),
    "T_06_gf003_min_key_function_reads_grad": ("GF003", f"`min()` {_BETWEEN}"),
    "T_07_gf003_sorted_key_lambda_reads_grad": ("GF003", f"`sorted()` {_BETWEEN}"),
    # Near misses: a safe fix, executed exact.
    "T_08_gf003_inert_keys_near_miss": ("GF003", None),
    "T_09_gf003_format_without_computed_fields_near_miss": ("GF003", None),
}

# Programs that leave process state behind: run in a process of their own.
APART: set = set()


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


# -- focused checks ------------------------------------------------------------------------------


@pytest.mark.parametrize("text, fields", [
    ("{0.gnorm:.4f}", {"gnorm"}),
    ("{m.a[1].b}", {"a", "b"}),
    ("{0:{1.width}}", {"width"}),
    ("{} {x} {0[1]}", set()),
    ("{", None),
])
def test_format_field_attributes(text, fields):
    from gradfix.analysis.exprs import format_field_attributes

    found = format_field_attributes(text)
    assert (None if found is None else set(found)) == fields


@pytest.mark.parametrize("key, harmless", [
    ("", True),
    ("key=None", True),
    ("key=len", False),  # (no classifier to prove `len` the builtin: T_08 shows it with one)
    ("key=lambda kv: -kv[1]", True),
    ("key=lambda v: v.grad", False),
    ("key=lambda v: f(v)", False),
    ("key=f", False),
    ("**kw", False),
])
def test_keyed_builtins(key, harmless):
    from gradfix.analysis.between import harmless_call

    for name in ("sorted", "min", "max"):
        call = cst.parse_expression(f"{name}(xs, {key})" if key else f"{name}(xs)")
        assert harmless_call(call) is harmless, (name, key)
