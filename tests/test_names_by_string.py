"""One check for a file that may bind its module names without a binding form
(`introspection.names_by_string`), used by module constants: numbers as coefficients
(`merge.module_constants`) and constant tensors (`constants.ModuleConstants`).

`W = 0.25` proves nothing when a star import, `globals()`, `exec`, `eval(..., globals())` or
`sys.modules` may rebind `W` (to a tensor that requires grad, whose gradient a fix would lose),
nor when any of them is merely mentioned (`g = globals`, then `g()["W"] = ...`).
"""

from __future__ import annotations

import libcst as cst
import pytest

from gradfix.analysis.introspection import names_by_string
from tests.test_field_cases import _lint


@pytest.mark.parametrize(
    "code,expected",
    [
        ("from config import *\n", True),
        ("g = globals\n", True),
        ('globals()["W"] = 1\n', True),
        ('exec("W = 2")\n', True),
        ('x = eval("(W := 2)", globals())\n', True),
        ("x = vars()\n", True),
        ("v = vars\n", True),
        ("import sys\nm = sys.modules[__name__]\n", True),
        ('mod = __import__("json")\n', True),
        ("net.eval()\n", False),
        ("d = vars(net)\n", False),
        ("import json\nx = json.loads('1')\n", False),
        ("from config import W2\n", False),
    ],
)
def test_names_by_string(code, expected):
    assert names_by_string(cst.parse_module(code)) is expected


SRC = '''\
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
W = 0.25


def step():
    l1 = F.mse_loss(a.detach(), b)
    l1.backward(retain_graph=True)
    l2 = W * F.mse_loss(a, b.detach())
    l2.backward()
'''


@pytest.mark.parametrize(
    "extra,safe",
    [
        ("", True),
        ("\n\ndef eval_mode(net):\n    net.eval()\n", True),
        ("\nfrom math import *\n", False),  # may rebind `W`
        ("\n\ndef set_w():\n    g = globals\n    g()['W'] = torch.ones((), requires_grad=True)\n", False),
    ],
    ids=["plain", "model_eval", "star_import", "globals_alias"],
)
def test_a_coefficient_constant_needs_a_file_that_binds_names_only_by_binding_forms(extra, safe):
    result = _lint(SRC + extra, ["GF001"])
    assert [f.fixable for f in result.findings] == [safe], [f.message for f in result.findings]
    if not safe:
        assert "coefficient `W` is not a number" in result.findings[0].message
