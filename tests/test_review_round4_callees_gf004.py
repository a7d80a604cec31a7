"""Wrong safe fixes a fourth review found and executed (reviewer K, `tests/review_round4/O_*`).

Causes:
- GF001 callees that read their argument's type or text (`isinstance(b, nn.Parameter)`,
  `b.__class__`, a `match` with class patterns, an f-string or `%`-format of it): `.detach()`
  turns a Parameter into a plain tensor and changes the text, so the callee is not pure.
- GF001 methods of a class built by machinery the file does not spell as a `class` statement
  (`type("Name", bases, ns)`, a store into `globals()`).
- GF001 rewrites of a shared argument: a tuple display lost its parentheses
  (`grad_scale(W, 2, 0.0)`); `torch.finfo(...)`/`torch.iinfo(...)` were taken for values
  `grad_scale` takes.
- GF004 carriers read by `.numpy()` through another expression (`s_loss.view(1).numpy()`,
  `(s_loss + 0).numpy()`) or whose `requires_grad` is printed.
- GF004 `sum` rebound by means other than a binding (`globals()['sum'] = ...`, `setattr` on the
  module, the builtins' `__dict__`, `exec`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round4").glob("O_*.py"))
# None: no finding; (code, text of the unsafe reason); or (code, None): a safe fix, executed exact.
EXPECTED = {
    "O_08_gf001_shared_tuple_display_loses_parens": ("GF001", None),
    "O_09_gf001_shared_finfo_grad_scale_crash": ("GF001", "`FI`, passed to both evaluations, becomes `grad_scale(FI, 0.0)`"),
    "O_13_gf004_sum_bound_through_globals": ("GF004", "the file may rebind builtins (a star import, `__builtins__`, a write to the `builtins` module, or a global bound through `globals()`, `exec`, `setattr` or an attribute store on a module the file may itself be)"),
    "O_14_gf004_sum_bound_through_setattr_module": ("GF004", "the file may rebind builtins (a star import, `__builtins__`, a write to the `builtins` module, or a global bound through `globals()`, `exec`, `setattr` or an attribute store on a module the file may itself be)"),
    "O_15_gf004_builtins_dict_imported": ("GF004", "the file may rebind builtins (a star import, `__builtins__`, a write to the `builtins` module, or a global bound through `globals()`, `exec`, `setattr` or an attribute store on a module the file may itself be)"),
    "O_16_gf004_sum_bound_by_exec": ("GF004", "the file may rebind builtins (a star import, `__builtins__`, a write to the `builtins` module, or a global bound through `globals()`, `exec`, `setattr` or an attribute store on a module the file may itself be)"),
    "O_10_gf004_numpy_on_view_of_carrier": ("GF004", "`s_loss.view(1).numpy()` (line 27) raises where `s_loss` requires grad"),
    "O_11_gf004_numpy_on_sum_of_carrier": ("GF004", "`(s_loss + 0).numpy()` (line 27) raises where `s_loss` requires grad"),
    "O_12_gf004_printed_requires_grad_of_carrier": ("GF004", "`s_loss.requires_grad` (line 27) reads whether `s_loss` requires grad"),
    "O_01_gf001_callee_isinstance_parameter": ("GF001", "reads `isinstance(b, torch.nn.Parameter)` (line 10), which differs between a detached argument"),
    "O_02_gf001_callee_class_is_tensor": ("GF001", "reads `b.__class__` (line 10), which differs between a detached argument"),
    "O_03_gf001_callee_match_class_pattern": ("GF001", "reads `case torch.nn.Parameter()` (line 11), which differs between a detached argument"),
    "O_04_gf001_callee_fstring_repr_branch": ("GF001", "reads `{b!r}` (line 10), which differs between a detached argument"),
    "O_05_gf001_callee_percent_format_branch": ("GF001", "reads `\"%r\" % (b,)` (line 10), which differs between a detached argument"),
    "O_06_gf001_class_built_by_type_call": ("GF001", "may be overridden by a class built at run time: `type(...)` (line 25) may derive from `Base`"),
    "O_07_gf001_class_rebound_through_globals": ("GF001", "may be overridden by a class built at run time: `type(...)` (line 24)"),
}


# Programs that leave the interpreter changed (`builtins.sum` rebound): run in a process of their own.
APART = {"O_15_gf004_builtins_dict_imported", "O_16_gf004_sum_bound_by_exec"}


def test_every_case_has_an_expectation():
    assert {p.stem for p in CASES} == set(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


def test_shared_tuple_display_keeps_its_parentheses():
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions
    from gradfix.rules import select

    path = Path(__file__).parent / "review_round4" / "O_08_gf001_shared_tuple_display_loses_parens.py"
    fixed = lint_bytes(path.read_bytes(), "train.py", LintOptions(tuple(r.CODE for r in select(["ALL"])), fix=True)).fixed
    assert b"critic((grad_scale((W, 2), 0.0)), grad_scale(x, -1.0), y)" in fixed


@pytest.mark.parametrize(
    "source, expected",
    [("(W, 2)", "(W, 2)"), ("((W, 2))", "((W, 2))"), ("(x)", "x"), ("(x for x in y)", "(x for x in y)"), ("(a + b)", "a + b")],
)
def test_as_argument(source, expected):
    import libcst as cst

    from gradfix.analysis.exprs import as_argument, code_of

    assert code_of(as_argument(cst.parse_expression(source))) == expected


def test_class_rebound_through_globals_without_type_call():
    """`globals()["Aligner"] = make_noisy(Aligner)`: the store is no binding gradfix sees."""
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions
    from gradfix.rules import select

    path = Path(__file__).parent / "review_round4" / "O_07_gf001_class_rebound_through_globals.py"
    source = path.read_text().replace(
        'globals()["Aligner"] = type("Aligner", (Aligner,), {"crit": with_input_noise(Aligner.crit)})',
        'from helpers import make_noisy\nglobals()["Aligner"] = make_noisy(Aligner)',
    )
    assert "globals()" in source and "type(" not in source.split("def with_input_noise")[1]
    findings = lint_bytes(source.encode(), "train.py", LintOptions(tuple(r.CODE for r in select(["ALL"])))).findings
    assert [(f.code, f.fixable) for f in findings] == [("GF001", False)]
    assert "may be rebound by `globals` (line 25)" in findings[0].fix.unsafe_reason
