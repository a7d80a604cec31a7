"""The pre-0.4 keyword `retain_variables=True` as a backward spelling (issue 12).

Before PyTorch 0.4, `loss.backward(retain_variables=True)` was what is now `retain_graph=True`.
Every torch gradfix supports (>= 2.1) raises TypeError on it, so old code with the pattern never
runs as written: gradfix reads it as the `retain_graph=True` it meant, wherever that keyword is
read (GF001, GF003, GF004, GF005), and never offers such a fix as safe. The rewrite runs where the
original raises, so each test executes (a) the finding and its exact rewrite, (b) the original on
the installed torch, which raises TypeError (the claim of the unsafe reason), (c) the original as
meant (`retain_variables` read as `retain_graph`) against the rewrite, every gradient compared.
A backward call written with the modern keyword keeps it, `retain_graph=True`, in the rewrite.
Passed with `retain_graph` too, or with anything but the literal `True`, it is no backward site.
"""

from __future__ import annotations

import pytest

from gradfix.engine import lint_bytes, prefilter
from gradfix.options import LintOptions
from gradfix.rules import select

REASON = (
    "`retain_variables` was removed from PyTorch (0.4 renamed it `retain_graph`): the original raises "
    "TypeError on torch >= 2.1 and the rewrite runs; check that this is the intent"
)
NOTE = "(`retain_variables=True` read as `retain_graph=True`: PyTorch 0.4 renamed it)"


def _lint(src: str, code: str):
    result = lint_bytes(src.encode(), "t.py", LintOptions((code,), fix=True, unsafe_fixes=True))
    assert result.error is None
    return result


def _exact(src: str, fixed: str) -> None:
    """(b) the original raises TypeError on the installed torch; (c) the original as meant gives
    the rewrite's gradients."""
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(src, fixed, filename="t.py", device="cpu", repeat=0)
    assert report.error_side == "original", report.error
    assert "TypeError" in report.error and "retain_variables" in report.error, report.error
    meant = src.replace("retain_variables", "retain_graph")
    report = harness.verify_pair(meant, fixed, filename="t.py", device="cpu", repeat=0)
    assert report.error is None, report.error
    bad = [f"{r.path} {r.what}: abs {r.max_abs} rel {r.max_rel}" for r in report.rows if not r.ok]
    assert report.rows and not bad, bad


def _check(src: str, code: str, expected, fixed: str):
    """(a) the findings at their positions, unsafe, with the reason, and the exact rewrite."""
    findings = lint_bytes(src.encode(), "t.py", LintOptions((code,))).findings
    assert [(f.code, f.line, f.col) for f in findings] == expected
    for finding in findings:
        assert finding.fix is not None and not finding.fix.safe
        assert finding.fix.unsafe_reason == REASON
    result = _lint(src, code)
    assert result.fixed is not None and result.fixed.decode() == fixed
    _exact(src, fixed)
    return findings


# -- GF001: the issue's example ------------------------------------------------------------

SEED = """import torch


def f(u, v):
    return (u - v).pow(2).mean()


torch.manual_seed(0)
w_h = torch.randn(16, 16, requires_grad=True)
w_x = torch.randn(16, 16, requires_grad=True)
w_y = torch.randn(16, 16, requires_grad=True)
a = torch.randn(8, 16)

h = torch.tanh(a @ w_h)
x = h @ w_x
y = h @ w_y

l1 = f(x.detach(), y)
l1.backward(retain_variables=True)
l2 = -1 * f(x, y.detach())
l2.backward({last})
"""

SEED_FIXED = """import torch
from gradfix.autograd import grad_scale


def f(u, v):
    return (u - v).pow(2).mean()


torch.manual_seed(0)
w_h = torch.randn(16, 16, requires_grad=True)
w_x = torch.randn(16, 16, requires_grad=True)
w_y = torch.randn(16, 16, requires_grad=True)
a = torch.randn(8, 16)

h = torch.tanh(a @ w_h)
x = h @ w_x
y = h @ w_y

l1_l2 = f(grad_scale(x, -1.0), y)
l1 = l1_l2.detach().clone()
l2 = -1 * l1_l2.detach()
l1_l2.backward({last})
"""


def test_gf001_the_issue_example():
    (finding,) = _check(SEED.format(last=""), "GF001", [("GF001", 20, 11)], SEED_FIXED.format(last=""))
    assert finding.message.startswith("`f` evaluated twice with complementary `.detach()` (line 18 and here)")
    assert NOTE in finding.message


def test_gf001_the_last_calls_retain_is_written_retain_graph():
    # docs/design.md §1, E7: the merged backward copies the second call's retain, in the modern spelling.
    _check(SEED.format(last="retain_variables=True"), "GF001", [("GF001", 20, 11)], SEED_FIXED.format(last="retain_graph=True"))


def test_gf001_old_first_modern_second():
    # Only the first call is old code: the original still raises at it.
    _check(SEED.format(last="retain_graph=True"), "GF001", [("GF001", 20, 11)], SEED_FIXED.format(last="retain_graph=True"))


# -- GF003 ----------------------------------------------------------------------------------

RUN = """import torch

torch.manual_seed(0)
w = torch.randn(4, 4, requires_grad=True)
v = torch.randn(4, requires_grad=True)
x = torch.randn(8, 4)


def step():
    h = torch.tanh(x @ w)
    loss_a = (h @ v).pow(2).mean()
    loss_b = h.abs().mean()
    {first}
    {second}
"""


@pytest.mark.parametrize(
    "first, second, merged, col",
    [
        ("loss_a.backward(retain_variables=True)", "loss_b.backward()", "(loss_a + loss_b).backward()", 5),
        # the last call's retain is kept (E7), written `retain_graph`
        (
            "loss_a.backward(retain_variables=True)",
            "loss_b.backward(retain_variables=True)",
            "(loss_a + loss_b).backward(retain_graph=True)",
            5,
        ),
        (
            "torch.autograd.backward(loss_a, retain_variables=True)",
            "torch.autograd.backward(loss_b, retain_variables=True)",
            "torch.autograd.backward(loss_a + loss_b, retain_graph=True)",
            5,
        ),
    ],
)
def test_gf003_merges_the_run_in_the_modern_spelling(first, second, merged, col):
    src = RUN.format(first=first, second=second)
    fixed = src.replace(f"    {first}\n    {second}\n", f"    {merged}\n")
    (finding,) = _check(src, "GF003", [("GF003", 13, col)], fixed)
    assert NOTE in finding.message
    if first.startswith("loss_a."):
        assert finding.message.startswith("`loss_a.backward(retain_variables=True)` keeps the graph for another backward (line 14)")


# -- GF004 ----------------------------------------------------------------------------------

MINIMAX = """import torch

torch.manual_seed(0)
w_s = torch.randn(6, 6, requires_grad=True)
w_p = torch.randn(6, 6, requires_grad=True)
w_r = torch.randn(6, 6, requires_grad=True)
inp = torch.randn(3, 6)
k = 3.0


def kl(p, q):
    return torch.sum(p * (torch.log(p + 0.0001) - torch.log(q + 0.0001)), dim=-1)


def step():
    series = [torch.softmax(inp @ w_s * s, -1) for s in (1.0, 2.0)]
    prior = [torch.softmax(inp @ w_p * s, -1) for s in (1.0, 2.0)]
    rec = (inp @ w_r - inp).pow(2).mean()
    s_loss, p_loss = 0.0, 0.0
    for i in range(len(series)):
        s_loss += torch.mean(kl(series[i], prior[i].detach()))
        p_loss += torch.mean(kl(series[i].detach(), prior[i]))
{tail}"""

MINIMAX_LOOP_FIXED = """    for i in range(len(series)):
        kl_shared = torch.mean(kl(series[i], grad_scale(prior[i], -1.0)))
        s_loss += kl_shared
        p_loss += kl_shared.detach()
"""


def _minimax_fixed(src: str, tail: str, new_tail: str) -> str:
    loop = """    for i in range(len(series)):
        s_loss += torch.mean(kl(series[i], prior[i].detach()))
        p_loss += torch.mean(kl(series[i].detach(), prior[i]))
"""
    fixed = src.replace("import torch\n", "import torch\nfrom gradfix.autograd import grad_scale\n", 1)
    return fixed.replace(loop, MINIMAX_LOOP_FIXED).replace(tail, new_tail)


def test_gf004_across_losses():
    tail = """    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_variables=True)
    loss2.backward()
"""
    src = MINIMAX.format(tail=tail)
    fixed = _minimax_fixed(src, "    loss1.backward(retain_variables=True)\n    loss2.backward()\n", "    (loss1 + loss2).backward()\n")
    (finding,) = _check(src, "GF004", [("GF004", 22, 19)], fixed)
    assert NOTE in finding.message


def test_gf004_one_backward_of_one_loss_is_written_retain_graph():
    # One loss (DCdetector's form): the backward call is no merge, but the fix rewrites it in the
    # modern spelling, and is unsafe for the same reason.
    tail = """    loss = rec + p_loss - s_loss
    loss.backward(retain_variables=True)
"""
    src = MINIMAX.format(tail=tail)
    fixed = _minimax_fixed(src, "loss.backward(retain_variables=True)", "loss.backward(retain_graph=True)")
    (finding,) = _check(src, "GF004", [("GF004", 22, 19)], fixed)
    assert NOTE in finding.message


# -- GF005 ----------------------------------------------------------------------------------

STEP = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(16, 4)
y = torch.randn(16, 2)


def step():
    opt.zero_grad()
    loss = F.mse_loss(net(x), y)
    {call}
    opt.step()
"""


@pytest.mark.parametrize(
    "call, kept, col",
    [
        ("loss.backward(retain_variables=True)", "loss.backward()", 19),
        ("torch.autograd.backward(loss, retain_variables=True)", "torch.autograd.backward(loss)", 35),
    ],
)
def test_gf005_drops_the_old_keyword(call, kept, col):
    src = STEP.format(call=call)
    (finding,) = _check(src, "GF005", [("GF005", 15, col)], STEP.format(call=kept))
    assert finding.message.startswith(
        "`retain_variables=True`, the pre-0.4 spelling of `retain_graph=True` (torch >= 2.1 raises TypeError on it), "
        "would keep the graph of `loss` alive, but nothing later in `step` backpropagates through it"
    )
    assert finding.fix.description == "Remove `retain_variables=True`"


# -- not sites: anything but `retain_variables=True` alone -----------------------------------

NOT_SITES = ["retain_variables=False", "retain_variables=flag", "retain_graph=True, retain_variables=True", "retain_variables=True, retain_graph=True"]


@pytest.mark.parametrize("keywords", NOT_SITES)
@pytest.mark.parametrize(
    "code, src",
    [
        ("GF001", SEED.replace("(retain_variables=True)", "(KW)").replace("def f(u, v):", "flag = True\n\n\ndef f(u, v):").format(last="")),
        ("GF003", RUN.format(first="loss_a.backward(KW)", second="loss_b.backward()").replace("def step():", "def step(flag=True):")),
        (
            "GF004",
            MINIMAX.format(tail="    loss1 = rec - k * s_loss\n    loss2 = rec + k * p_loss\n    loss1.backward(KW)\n    loss2.backward()\n").replace(
                "def step():", "def step(flag=True):"
            ),
        ),
        ("GF005", STEP.format(call="loss.backward(KW)").replace("def step():", "def step(flag=True):")),
    ],
)
def test_no_finding_for_other_values_or_both_keywords(code, src, keywords):
    # The control: the same source with `retain_variables=True` alone is reported.
    assert lint_bytes(src.replace("KW", "retain_variables=True").encode(), "t.py", LintOptions((code,))).findings
    src = src.replace("KW", keywords)
    assert lint_bytes(src.encode(), "t.py", LintOptions((code,))).findings == []


# -- the prefilter ---------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["GF001", "GF003", "GF005"])
def test_the_prefilter_lets_the_old_keyword_through(code):
    src = SEED.format(last="") if code != "GF005" else STEP.format(call="loss.backward(retain_variables=True)")
    assert "retain_graph" not in src
    assert prefilter(src.encode(), select([code])) == select([code])


def test_retain_grad_does_not_open_the_token_stage():
    # The alternatives are the two keywords, not their prefix `retain_`: `retain_grad()` is common.
    src = "import torch\nx = torch.ones(2, requires_grad=True)\ny = x.detach()\nx.retain_grad()\n(x * 2).sum().backward()\n"
    rules = select(["GF001", "GF003", "GF005"])
    assert prefilter(src.encode(), rules, parse=False) == []
