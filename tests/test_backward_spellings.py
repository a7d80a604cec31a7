"""Backward calls whose loss is an argument: Lightning's `self.manual_backward(loss, ...)` and
`torch.autograd.backward(loss, ...)` are backward sites like `loss.backward(...)`; spellings that
are not (Accelerate's `accelerator.backward(loss)`, extra positional arguments, a list of tensors)
are left alone. Fixtures execute the rewrites (GF001 p30, GF003 p12, GF005 p04, GF001 u11)."""

from __future__ import annotations

import pytest

from gradfix.engine import lint_bytes, prefilter
from gradfix.options import LintOptions
from gradfix.rules import select

HEAD = """import torch

w = torch.randn(3, requires_grad=True)


class Module:
    def training_step(self, accelerator, g):
        a = (w * 2.0).sum()
        b = (w ** 2).sum()
"""


def _findings(body: str, codes=("GF003", "GF005")):
    source = HEAD + body
    result = lint_bytes(source.encode(), "t.py", LintOptions(codes))
    assert result.error is None
    return [(f.code, f.line, f.col) for f in result.findings]


def test_manual_backward_run_is_merged_where_written():
    body = "        self.manual_backward(a, retain_graph=True)\n        self.manual_backward(b)\n"
    assert _findings(body) == [("GF003", 10, 9)]
    fixed = lint_bytes((HEAD + body).encode(), "t.py", LintOptions(("GF003",), fix=True)).fixed
    assert fixed.decode().endswith("        self.manual_backward(a + b)\n")


def test_autograd_backward_run_is_merged():
    body = "        torch.autograd.backward(a, retain_graph=True)\n        torch.autograd.backward(b)\n"
    assert _findings(body) == [("GF003", 10, 9)]


@pytest.mark.parametrize(
    "body",
    [
        # Accelerate's backward(loss): to gradfix, a positional argument of `X.backward` is a tensor's gradient.
        "        accelerator.backward(a, retain_graph=True)\n        accelerator.backward(b)\n",
        # a second positional argument is passed on to `backward` as its `gradient`
        "        self.manual_backward(a, g, retain_graph=True)\n        self.manual_backward(b)\n",
        # `grad_tensors=` weights the losses: not a plain backward
        "        torch.autograd.backward(a, grad_tensors=g, retain_graph=True)\n        torch.autograd.backward(b)\n",
        # one call over a list: one pass already
        "        torch.autograd.backward([a, b], retain_graph=True)\n",
        # `*args` may hold anything
        "        self.manual_backward(*[a], retain_graph=True)\n        self.manual_backward(b)\n",
    ],
)
def test_spellings_that_are_not_sites(body):
    assert _findings(body, ("GF003",)) == []


def test_gf005_reads_manual_backward_retain():
    body = "        self.manual_backward(a, retain_graph=True)\n        print(a.item())\n"
    assert _findings(body, ("GF005",)) == [("GF005", 10, 33)]


@pytest.mark.parametrize("spelling", ["self.manual_backward({}, retain_graph=True)", "torch.autograd.backward({}, retain_graph=True)"])
def test_prefilter_keeps_the_spellings(spelling):
    body = f"        {spelling.format('a')}\n        {spelling.format('b').replace(', retain_graph=True', '')}\n"
    data = (HEAD + body).encode()
    assert prefilter(data, select(["GF003"])) == select(["GF003"])


DICT_STEP = """import torch

w = torch.randn(3, requires_grad=True)


def step({params}):
    {build}
    losses["a"] = (w * 2.0).sum()
    losses["b"] = (w ** 2).sum()
    losses["a"].backward(retain_graph=True)
    {between}
    losses["b"].backward()
"""


@pytest.mark.parametrize(
    "params, build, between, expected",
    [
        ("", "losses = {}", "pass", [("GF003", 10, 5, True)]),
        ("", "losses = dict()", "print(losses)", [("GF003", 10, 5, True)]),
        # a dict from the caller: what `losses["a"]` holds when read later is not proven
        ("losses", "pass", "pass", [("GF003", 10, 5, False)]),
        # bound twice in the function
        ("", "losses = {}\n    losses = {}", "pass", [("GF003", 11, 5, False)]),
        # a store into the dict, or a method that changes it, between the calls: no run
        ("", "losses = {}", 'losses["a"] = losses["a"] * 0.5', []),
        ("", "losses = {}", "losses.clear()", []),
    ],
)
def test_losses_kept_in_a_dict_the_function_builds(params, build, between, expected):
    source = DICT_STEP.format(params=params, build=build, between=between)
    result = lint_bytes(source.encode(), "t.py", LintOptions(("GF003",)))
    assert result.error is None
    assert [(f.code, f.line, f.col, f.fixable) for f in result.findings] == expected
    if expected and not expected[0][3]:
        assert "`losses[\"a\"]` is written inline" in result.findings[0].message


AUTOGRAD_THEN_METHOD = '''\
import torch

torch.set_default_dtype(torch.float64)
a = torch.randn(4, 3, requires_grad=True)


def step():
    h = a.tanh()
    l1 = (h * 2.0).sum()
    l2 = h.pow(2).mean()
    torch.autograd.backward(l1, retain_graph=True)
    l2.backward()
'''


def test_autograd_backward_and_the_method_are_one_spelling():
    # `Tensor.backward` calls `torch.autograd.backward`: a run may mix them (review, stop 24,
    # kept `manual_backward` apart from `.backward()`, not these).
    from tests.test_field_cases import _safe_fix_is_exact

    findings = lint_bytes(AUTOGRAD_THEN_METHOD.encode(), "train.py", LintOptions(("GF003",))).findings
    assert [(f.code, f.line, f.fixable) for f in findings] == [("GF003", 11, True)]
    _safe_fix_is_exact(AUTOGRAD_THEN_METHOD, ["GF003"])
