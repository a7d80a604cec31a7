"""Review round 16 (reviewer Z, GF002's loss weights bound outside the file, stop 35).

Causes:
- `_defined_fix` proved nothing rebinds an outside coefficient between the one evaluation (at the
  earlier definition) and the sum by `scan_between` over `with_aliases` of its path; that follows
  the names the function binds, not two parameters the caller gives one object: `owner.beta = 0.5`
  between `a = f(...)` and `loss = a + model.beta * b`, with `step(w, w, ...)`, makes the sum read
  0.5 where the rewrite's `grad_scale` read 0.25 (Z_01). Now `_stores_attribute_named`: a store
  into an attribute of one of the coefficient's names on any object (`x.beta = ...`,
  `x.cfg = ...`) between them makes the fix unsafe.
- `_coefficient_binding` knew the file's bindings of the attribute as store targets and
  `setattr(x, "beta", v)`; but a file binds an attribute by its name as a string in more ways:
  nn.Module's `register_buffer("beta", t)` (Z_02), `vars(self)["beta"] = t` (Z_04),
  `object.__setattr__`, `super().__setattr__`, `register_parameter`, `self.__dict__["beta"] = t`.
  There the file shows a tensor of two elements, and the safe rewrite raised where the original
  ran. Now `_named_by_string` (allowlist): the name as a string literal anywhere but a read
  (`getattr`/`hasattr`'s name, a subscript load, a dict display's key, a docstring) makes it unsafe.
- `_passed_in` took every parameter the function does not rebind for a caller's value, but a
  call without the argument passes the default the file gives: `def __init__(self,
  beta=torch.tensor([0.25, 1.0]))` (Z_06) shows a tensor of two elements. Now a parameter whose
  default is not a real literal, None or a number constant of the file is not taken.
- `_number_or_argument` took any literal but a string for a number, `0.5j` too (Z_07): the
  original's loss is complex (`loss.abs().backward()` runs), `grad_scale` refuses a complex scale.
  Now `_real_literal` (defaults alike).
- The rewrite's gradient reaches a coefficient only through the correction (`grad_scale` detaches
  its scale); a learnable weight that cancels there (`(1 - self.alpha) * f(t, z.detach()) +
  self.alpha * f(t.detach(), z)`: correction 0, Z_09; `self.alpha * ... + (2 - self.alpha) * ...`:
  correction 1, Z_10) was left out of the graph, its grad None where the original gave zero, which
  SGD's weight decay still steps. Now a coefficient taken by `_outside_coefficients` that is not a
  symbol of the correction makes the fix unsafe (`Visitor._finding`, "cancels in the correction").
Near misses: Z_11, two learnable weights both kept in the correction; Z_03, a store into another attribute between (`owner.gamma = 0.5`); Z_05, the name read
by `getattr(config, "beta", 0.25)`, a config dict read, a logged dict's key; Z_08, defaults
`-0.25`, None and a number constant of the file.
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.rules._gf002_detached_sum_impl import _real_literal, _stores_attribute_named
from tests.test_field_cases import _lint
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round16").glob("Z_*.py"))
STRING = "is named as a string at line "
CANCELS = "coefficient `self.alpha` cancels in the correction: if it is a tensor that requires grad, the rewrite gives it no gradient (None)"

EXPECTED = {
    "Z_01_gf002_weight_stored_through_other_name_between": (
        "GF002", "coefficient `model.beta` may be rebound between the one evaluation and the sum, which read it at two points"),
    "Z_02_gf002_weight_registered_as_buffer_by_name": (
        "GF002", "coefficient `self.beta` " + STRING + '10 (`self.register_buffer("beta", torch.tensor([0.25, 0.5]))`), which may bind it'),
    "Z_03_gf002_other_attribute_stored_near_miss": ("GF002", None),
    "Z_04_gf002_namespace_dict_store_of_weight": ("GF002", "coefficient `self.beta` " + STRING + '13 (`vars(self)["beta"]`)'),
    "Z_05_gf002_weight_read_and_logged_by_name_near_miss": ("GF002", None),
    "Z_06_gf002_weight_default_is_a_tensor": ("GF002", "coefficient `self.beta` is bound to `self.beta = beta` (line 10)"),
    "Z_07_gf002_weight_bound_to_complex_literal": ("GF002", "coefficient `self.beta` is bound to `self.beta = 0.5j` (line 10)"),
    "Z_08_gf002_weight_number_defaults_near_miss": ("GF002", None),
    "Z_09_gf002_mixing_weight_cancels_in_correction": ("GF002", CANCELS),
    "Z_10_gf002_weight_cancels_in_numeric_correction": ("GF002", CANCELS),
    "Z_11_gf002_weights_kept_in_correction_near_miss": ("GF002", None),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _statements(text):
    return list(cst.parse_module(text).body)


@pytest.mark.parametrize(
    "text, stored",
    [
        ("owner.beta = 0.5\n", True),
        ("for owner.beta in (1,):\n    pass\n", True),
        ("owner.cfg.beta += 1\n", True),
        ("del other.beta\n", True),
        ("x.beta[0] = 1\n", True),
        ("owner.gamma = 0.5\nbeta = 2\ny = owner.beta\n", False),
    ],
)
def test_stores_attribute_named(text, stored):
    assert _stores_attribute_named(_statements(text), {"beta"}) is stored


VQ = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQ(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta
{EXTRA}
    def forward(self, z, t):
        return F.mse_loss(t, z.detach()) + self.beta * F.mse_loss(t.detach(), z)
"""


@pytest.mark.parametrize(
    "extra, safe",
    [
        ('        object.__setattr__(self, "beta", torch.ones(2))\n', False),
        ('        super().__setattr__("beta", torch.ones(2))\n', False),
        ('        self.register_parameter("beta", nn.Parameter(torch.ones(2)))\n', False),
        ('        self.__dict__["beta"] = torch.ones(2)\n', False),
        ('        key = "beta"\n', False),
        ('        "beta"\n', True),
        ('        self.tag = getattr(self, "beta", 0.25), hasattr(self, "beta")\n', True),
        ('        self.seen = {"beta": 1}["beta"]\n', True),
    ],
    ids=["object-setattr", "super-setattr", "register-parameter", "dict-store", "string-bound", "docstring", "getattr-hasattr", "dict-read"],
)
def test_the_name_as_a_string(extra, safe):
    result = _lint(VQ.replace("{EXTRA}", extra), ["GF002"], unsafe=not safe)
    assert [(f.code, f.fixable) for f in result.findings] == [("GF002", safe)]
    if not safe:
        assert STRING in result.findings[0].message, result.findings[0].message


@pytest.mark.parametrize(
    "text, real",
    [("0.25", True), ("-2", True), ("(1)", True), ("True", True), ("None", True),
     ("0.5j", False), ("-1j", False), ('"0.25"', False), ("torch.ones(2)", False), ("BETA", False)],
)
def test_real_literal(text, real):
    assert _real_literal(cst.parse_expression(text)) is real


@pytest.mark.parametrize(
    "signature, safe",
    [("beta=0.25", True), ("beta=None", True), ("beta=BETA", True), ("beta=torch.ones(2)", False), ("beta=2j", False), ("*, beta=[0.25]", False)],
)
def test_a_parameter_s_default(signature, safe):
    src = (
        "import torch\nimport torch.nn.functional as F\nBETA = 0.5\n\n\n"
        f"def step(z, t, {signature}):\n"
        "    return F.mse_loss(t, z.detach()) + beta * F.mse_loss(t.detach(), z)\n"
    )
    result = _lint(src, ["GF002"], unsafe=not safe)
    assert [(f.code, f.fixable) for f in result.findings] == [("GF002", safe)]
