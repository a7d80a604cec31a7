"""Parsing does not depend on the running interpreter (issue 14): a file with syntax newer than the
interpreter's grammar (PEP 695 on 3.11, 3.12's nested f-string quotes) is checked and fixed with
libcst's own parser; a real syntax error is still CPython's one line with its position."""

from __future__ import annotations

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

NEWER = '''\
import torch
import torch.nn.functional as F

type Pair = tuple[int, int]


def first[T](xs: list[T]) -> T:
    return xs[0]


a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def step():
    x, y = a * 2, b * 3
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    print(f"{"nested"} quotes")
    l2 = -F.mse_loss(x, y.detach())
    l2.backward()
'''


def test_newer_syntax_is_checked_and_fixed_whatever_the_interpreter():
    result = lint_bytes(NEWER.encode(), "train.py", LintOptions(("GF001",), fix=True))
    assert result.error is None
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(20, 11, True)]
    fixed = result.fixed.decode()
    assert "type Pair = tuple[int, int]\n" in fixed and 'print(f"{"nested"} quotes")' in fixed
    assert "    l1 = F.mse_loss(grad_scale(x, -1.0), y)\n" in fixed


def test_a_real_syntax_error_is_still_one_line_with_its_position():
    source = b"import torch\n\ndef f(:\n    x.detach()\n    l.backward(retain_graph=True)\n    x.detach()\n"
    result = lint_bytes(source, "bad.py", LintOptions(("GF001",)))
    assert result.error is not None and result.error.startswith("3:7: SyntaxError: ")
