"""Pairs whose stop-gradient sits in a tensor method's receiver (issue 12): `(z_q - z.detach()).pow(2).mean()`.

A pure tensor method (`.pow`, `.abs`, `.sum`, ...) called on two receivers that
are one expression modulo complementary `.detach()` is one computation: its
operands are the receiver's and the arguments'. Found by GF002 (VQ-VAE's
commitment and codebook terms written as method chains) and GF001, rewritten,
and executed against the original.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

VQ = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(4, 4)
codebook = nn.Parameter(torch.randn(6, 4))
BETA = 0.25
x = torch.randn(5, 4)


def step():
    z = enc(x)
    z_q = codebook[torch.cdist(z, codebook).argmin(1)]
    loss = {TERMS}
    loss.backward()
'''

PAIRS = {
    "pow_mean": "(z_q - z.detach()).pow(2).mean() + BETA * (z_q.detach() - z).pow(2).mean()",
    "abs_sum": "(z_q.detach() - z).abs().sum() * BETA + (z_q - z.detach()).abs().sum()",
    "square_mean_dim": "(z_q - z.detach()).square().mean(dim=1).sum() + BETA * (z_q.detach() - z).square().mean(dim=1).sum()",
}


@pytest.mark.parametrize("case", sorted(PAIRS))
def test_gf002_pairs_on_receivers_and_is_exact(case):
    src = VQ.replace("{TERMS}", PAIRS[case])
    result = _lint(src, ["GF002"])
    assert [(f.code, f.line, f.fixable) for f in result.findings] == [("GF002", 14, True)]
    assert "evaluated twice in one sum" in result.findings[0].message
    assert "grad_scale(z, BETA)" in result.fixed.decode()
    _safe_fix_is_exact(src, ["GF002"])


def test_gf002_rewrite_text():
    src = VQ.replace("{TERMS}", PAIRS["pow_mean"])
    fixed = _lint(src, ["GF002"]).fixed.decode()
    assert (
        "    loss_term = (z_q - grad_scale(z, BETA)).pow(2).mean()\n"
        "    loss = loss_term + (BETA * loss_term).detach()\n"
    ) in fixed
    assert _lint(src, ["GF002"]).findings[0].message.startswith("`.pow()` evaluated twice")


NOT_PAIRS = {
    "other_exponent": "(z_q - z.detach()).pow(2).mean() + BETA * (z_q.detach() - z).pow(3).mean()",
    "other_method": "(z_q - z.detach()).pow(2).mean() + BETA * (z_q.detach() - z).abs().mean()",
    "in_place": "(z_q - z.detach()).pow_(2).mean() + BETA * (z_q.detach() - z).pow_(2).mean()",
    "other_receiver": "(z_q - z.detach()).pow(2).mean() + BETA * (z_q.detach() + z).pow(2).mean()",
    "one_operand": "(z - z_q).detach().pow(2).mean() + BETA * (z - z_q).pow(2).mean()",
}


@pytest.mark.parametrize("case", sorted(NOT_PAIRS))
def test_near_misses_are_not_paired(case):
    src = VQ.replace("{TERMS}", NOT_PAIRS[case])
    assert _lint(src, ["GF002"], unsafe=True).findings == []


def test_a_call_in_the_receiver_makes_it_unsafe():
    # `enc(x)` runs twice in the original and once after the rewrite.
    src = VQ.replace("{TERMS}", "(z_q - enc(x).detach()).pow(2).mean() + BETA * (z_q.detach() - enc(x)).pow(2).mean()")
    result = _lint(src, ["GF002"])
    assert [(f.fixable) for f in result.findings] == [False]
    assert "`enc(x)` in the arguments runs twice in the original and once after the rewrite" in result.findings[0].message


GF001 = '''\
import torch

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def step():
    x, y = a * 2, b * 3
    l1 = (x.detach() - y).pow(2).mean()
    l1.backward(retain_graph=True)
    l2 = -0.5 * (x - y.detach()).pow(2).mean()
    l2.backward()
'''


def test_gf001_pairs_on_receivers_and_is_exact():
    result = _lint(GF001, ["GF001"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(11, 17, True)]
    fixed = result.fixed.decode()
    assert "    l1 = (grad_scale(x, -0.5) - y).pow(2).mean()\n    l1.backward()\n" in fixed
    _safe_fix_is_exact(GF001, ["GF001"])
