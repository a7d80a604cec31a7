"""`between.with_aliases` and in-place keywords: what counts as changing an operand between two passes.

The field cases (tests/test_field_cases_2.py) execute the wrong fixes these
prevent; here, the analysis itself, and that ordinary code between the passes
(a metrics dict, a derived tensor) keeps its safe fix.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gradfix.analysis.between import with_aliases
from gradfix.analysis.exprs import is_inplace_call
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions


def _aliases(body: str, *watched: str) -> list:
    function = cst.parse_module("def step():\n" + textwrap.indent(textwrap.dedent(body), "    ")).body[0]
    paths = [tuple(w.split(".")) for w in watched]
    return [p[0] for p in with_aliases(paths, function)[len(paths):]]


@pytest.mark.parametrize(
    "body,expected",
    [
        ("yv = y.view(-1)\n", ["yv"]),
        ("cache = feats\nc2 = cache\n", ["cache", "c2"]),  # an alias of an alias
        ("z = feats['x']\n", ["z"]),
        ("a, b = y.chunk(2)\n", ["a", "b"]),
        ("parts = torch.split(y, 2)\n", ["parts"]),
        ("for t in feats:\n    pass\n", ["t"]),
        ("yd = (y.detach())\n", ["yd"]),  # `.detach()` shares the storage
        # new tensors, not views: no alias
        ("z = y * 2\nw = y.clone()\nn = len(feats)\nfor i in range(3):\n    pass\n", []),
    ],
)
def test_with_aliases(body, expected):
    assert _aliases(body, "y", "feats") == expected


def test_nested_functions_are_not_looked_into():
    assert _aliases("def inner():\n    q = y\n", "y") == []


@pytest.mark.parametrize(
    "call,inplace",
    [
        ("x.add_(1)", True),
        ("F.relu(x, inplace=True)", True),
        ("F.relu(x, inplace=flag)", True),  # not provably False
        ("F.relu(x, inplace=False)", False),
        ("torch.clamp(x, 0, 1, out=x)", True),
        ("torch.clamp(x, 0, 1)", False),
        ("x.__init__()", False),
    ],
)
def test_is_inplace_call(call, inplace):
    assert is_inplace_call(cst.parse_expression(call)) is inplace


SAFE_BETWEEN = '''\
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def step(stats):
    x, y = a * 2, b * 3
    z = y * 2
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    stats["l1"] = l1.item()
    z[0] = 0.0
    F.relu(z, inplace=False)
    l2 = -F.mse_loss(x, y.detach())
    l2.backward()
'''


def test_ordinary_code_between_the_passes_keeps_the_safe_fix():
    # A metrics dict, a store into a tensor derived from (not a view of) an operand, `inplace=False`.
    result = lint_bytes(SAFE_BETWEEN.encode(), "train.py", LintOptions(("GF001",)))
    assert [(f.line, f.fixable) for f in result.findings] == [(16, True)]


def test_augmented_sums_of_numbers_do_not_alias_what_they_add():
    """`s += crit(x, y)` on an `s` that starts as a number (or a tensor of a factory) adds into a
    new value: `s` never refers to `x`, as it would for a list (`lst += [x]`)."""
    import libcst as cst

    from gradfix.analysis.between import with_aliases

    def aliases(body: str):
        function = cst.parse_module("def f(x, crit, lst):\n" + body).body[0]
        return with_aliases([("x",)], function)

    assert ("s",) not in aliases("    s = 0.0\n    s += crit(x)\n")
    assert ("s",) not in aliases("    s = torch.zeros(())\n    s -= crit(x)\n")
    assert ("lst",) in aliases("    lst += [x]\n")  # a parameter: may be a list
    assert ("s",) in aliases("    s = []\n    s += crit(x)\n")  # a list
    assert ("s",) in aliases("    s = 0.0\n    s, t = pair()\n    s += crit(x)\n")  # bound some other way too
    assert ("s",) in aliases("    s = 0.0\n    for s in xs:\n        pass\n    s += crit(x)\n")


def test_numeric_sums_through_arithmetic():
    import libcst as cst

    from gradfix.analysis.between import with_aliases

    def aliases(body: str):
        function = cst.parse_module("def f(x, crit, k, xs):\n" + body).body[0]
        return with_aliases([("x",)], function)

    assert ("s",) not in aliases("    s = 0.0\n    s += crit(x)\n    s = s / len(xs)\n")
    assert ("s",) in aliases("    s = 0.0\n    s += crit(x)\n    s = s * k\n")  # `k` may be anything
    assert ("s",) in aliases("    s = 0\n    s = 2 * s\n    s += crit(x)\n")  # an int on the left: `2 * [x]`


@pytest.mark.parametrize(
    "body,expected",
    [
        # what a watched name was bound from shares its storage: a store into it changes the operand
        ("p = P[1]\n", ["P"]),
        ("prior = [P[i] for i in range(3)]\n", ["P"]),
        ("prior = Q.view(-1)\n", ["Q"]),
        # `P * 2` may be a list repeated (`[t] * 2`): its items are kept
        ("p = P * 2\n", ["P"]),
        # a new tensor shares nothing
        ("p = P.clone()\n", []),
        ("prior = [P[i].clone() for i in range(3)]\n", []),
    ],
)
def test_the_bases_of_a_watched_view_are_watched(body, expected):
    assert _aliases(body, "p", "prior") == expected


def test_names_a_case_pattern_binds_alias_the_subject():
    assert _aliases("match prior:\n    case [_, m1, *rest]:\n        pass\n", "prior") == ["m1", "rest"]
