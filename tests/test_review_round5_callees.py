"""Review round 5 (reviewer S): the callee proofs of GF001 and GF002 and the rewrite's text.

Causes:
- A file that reaches its own module object (`import __main__`, `exprs.dynamic_global`) may make a
  module-level "constant" tensor trainable (`__main__.W.requires_grad_()`) or rebind a number
  coefficient to a trainable tensor (`__main__.BETA = torch.tensor(..., requires_grad=True)`):
  neither is a constant there (`constants.ModuleConstants`, `merge.module_constants`).
- GF002's rewrite calls `.detach()` on the one evaluation's value (the correction
  `m + (c * m).detach()`, a name rebuilt as `m.detach()`): a callee that returns a number
  (`float(...)`, `.numel()`) sums in the original and has no `.detach()`
  (`callees.tensor_result`).
- A `__torch_function__` (of a tensor subclass or a mode) or a tensor subclass's method override runs
  code of the file at each torch call on its tensors: twice in the original, once after the rewrite
  (`MergeSafety.reasons`).
- A pure torch function that writes into `out` given by position (`torch.norm(t, p, dim, keepdim,
  out)`, `F.normalize`) or through a `**` mapping (`**{"out": t}`): `exprs.may_write`.
- Coefficient constants beyond a float's range (`1e400`, `1e300 * 1e300`): gradfix raised
  OverflowError writing the rewrite's scale (`linear.finite`).
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from tests.test_review_reproducers import ALL, check_case

CASES = sorted((Path(__file__).parent / "review_round5").glob("S_*.py"))

EXPECTED = {
    "S_01_gf001_constant_tensor_through_import_main": ("GF001", "reads `W` from outside"),
    "S_02_gf001_coefficient_rebound_through_import_main": ("GF001", "coefficient `BETA` is not a number"),
    "S_03_gf002_callee_returns_a_number": ("GF002", "calls `.detach()` on the value of `score(...)`"),
    "S_04_gf002_chain_numel_of_defined_terms": ("GF002", "calls `.detach()` on the value of `prod(...)`"),
    "S_05_gf001_torch_function_counts_calls": ("GF001", "`__torch_function__` (line 11) may run code of the file"),
    "S_06_gf001_tensor_subclass_method_override": ("GF001", "`Logged` (line 8) may run code of the file"),
    "S_07_gf001_out_through_double_star_mapping": ("GF001", 'modifies a tensor in place (`torch.mul(..., **{"out": b.detach()})`)'),
    "S_08_gf001_norm_out_by_position": ("GF001", "modifies a tensor in place (`torch.norm(..., b.detach())`)"),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _fixes(source: str):
    findings = lint_bytes(source.encode(), "train.py", LintOptions(ALL, fix=True)).findings
    return [(f.code, f.fixable) for f in findings]


_SUM = '''
import torch
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)

{callee}

def step():
    total = critic(x.detach(), y) + 0.5 * critic(x, y.detach())
    total.backward()
'''


@pytest.mark.parametrize(
    "callee",
    [
        "def critic(a, b):\n    return ((a - b) ** 2).mean()",
        "def critic(a, b):\n    d = a - b\n    return d.pow(2).sum() / 2",
        "critic = lambda a, b: torch.nn.functional.mse_loss(a, b)",
        "def critic(a, b):\n    return torch.sum(a * b) if True else -torch.sum(a * b)",
    ],
)
def test_tensor_results_keep_their_safe_fix(callee):
    assert _fixes(_SUM.format(callee=callee)) == [("GF002", True)]


@pytest.mark.parametrize(
    "callee",
    [
        "def critic(a, b):\n    return float((a * b).sum())",
        "def critic(a, b):\n    return (a * b).size(0)",
        "def critic(a, b):\n    return torch.max(a * b, 0)",
        "def critic(a, b):\n    return a * b",  # parameters: of unknown type
        "def critic(a, b):\n    if a.sum() > 0:\n        return (a * b).sum()\n    return len(a)",
    ],
)
def test_unproven_results_lose_the_safe_fix(callee):
    assert _fixes(_SUM.format(callee=callee)) == [("GF002", False)]


def test_module_constants_refused_where_the_file_imports_main():
    source = "import torch\nimport __main__\nBETA = 0.5\nW = torch.randn(3)\n"
    from gradfix.analysis.merge import module_constants

    assert module_constants(cst.parse_module(source)) == {}
    assert module_constants(cst.parse_module(source.replace("import __main__\n", ""))) != {}


_PAIR = '''
import torch
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)

def critic(a, b):
    return (a * b).sum()

def step():
    l1 = critic(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = {coef} * critic(x, y.detach())
    l2.backward()
'''


@pytest.mark.parametrize("coef", ["-1e400", "1e-400", "1e300 * 1e300", "(1 / 1e-320)", "1" + "0" * 400])
def test_coefficients_beyond_float_range_are_no_pattern(coef):
    # Python reads them as inf or 0.0 (or cannot make a float of them): gradfix raised OverflowError
    # rendering the rewrite's scale; now they are no coefficient (GF003 still merges the passes).
    assert "GF001" not in [code for code, _ in _fixes(_PAIR.format(coef=coef))]


def test_finite_coefficients():
    from gradfix.analysis.linear import parse_coef, split_linear

    assert parse_coef(cst.parse_expression("1e300 * 1e300")) is None
    assert parse_coef(cst.parse_expression("1e-400")) is None
    assert parse_coef(cst.parse_expression("0.0")) is not None
    assert split_linear(cst.parse_expression("f(x) * 1e200 * 1e200")) is None
    assert split_linear(cst.parse_expression("f(x) / 1e-320")) is None
    assert split_linear(cst.parse_expression("0.25 * f(x) / 3")) is not None


def test_may_write():
    from gradfix.analysis.exprs import may_write

    call = lambda text: cst.parse_expression(text)  # noqa: E731
    assert may_write(call('torch.mul(t, 2, **kw)'))
    assert may_write(call('torch.norm(t, 2, None, False, o)'))
    assert not may_write(call('torch.norm(t, 2, None, False, None)'))
    assert not may_write(call('torch.norm(t, 2, 0)'))
    assert may_write(call('F.normalize(t, 2.0, 0, 1e-12, o)'))
    assert not may_write(call('F.normalize(t, 2.0, 0)'))
