"""`exprs.read_paths` reads a keyword argument's value, not its keyword.

`u = d(u=a.detach(), v=b)` after `f = d(u=a, v=b.detach())` is GF001's pair at module level; the
keyword `u` was read as the name `u`, which the second statement binds, so the pair looked like an
operand rebound between the passes and got no finding (found by `tests/test_properties.py` while
hypothesis shrank another failure, stop 29).
"""
import libcst as cst
import pytest

from gradfix.analysis.exprs import read_paths
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

SOURCE = """\
import torch

torch.manual_seed(0)
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def d(u, v):
    return torch.mean((u - v) ** 2)


f = d(u=a, v=b.detach())
f.backward(retain_graph=True)
u = d(u=a.detach(), v=b)
u.backward()
"""


def test_a_keyword_is_no_read():
    assert read_paths(cst.parse_expression("d(u=a.detach(), v=b)")) == [("d",), ("a",), ("a", "detach"), ("b",)]
    assert read_paths(cst.parse_expression("d(u=u, **kw)")) == [("d",), ("u",), ("kw",)]


def test_the_keyword_pair_gets_its_safe_fix_and_it_is_exact():
    findings = lint_bytes(SOURCE.encode(), "snippet.py", LintOptions(("GF001",))).findings
    assert [(f.code, f.line, f.col, f.fix.safe) for f in findings] == [("GF001", 14, 5, True)]
    fixed = lint_bytes(SOURCE.encode(), "snippet.py", LintOptions(("GF001",), fix=True)).fixed
    pytest.importorskip("torch")
    from gradfix.harness import verify_pair

    report = verify_pair(SOURCE, fixed.decode(), filename="snippet.py", device="cpu", repeat=0)
    assert report.error is None and report.ok, report.rows
