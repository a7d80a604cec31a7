"""GF002 with terms held in attributes (issue 12): `self.commitment_loss = F.mse_loss(z_q.detach(), z)`.

A module that keeps its latent losses on `self` and sums them is the same pattern. The rewrite
rebuilds each attribute as the detached value of the one evaluation (other methods, a trainer
or a logger may read it). Whether any of them reads it as a tensor cannot be seen from the
file, so the fix is always unsafe; executed, it is exact where nothing does.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _unsafe_fix_is_exact

SRC = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
BETA = 0.25


class VQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.dec = nn.Linear(4, 4)
        self.codebook = nn.Parameter(torch.randn(6, 4))

    def forward(self, x):
        z = self.enc(x)
        z_q = self.codebook[torch.cdist(z, self.codebook).argmin(1)]
        self.commitment_loss = F.mse_loss(z_q.detach(), z)
        self.codebook_loss = F.mse_loss(z_q, z.detach())
        rec = F.mse_loss(self.dec(z + (z_q - z).detach()), x)
        return rec + self.codebook_loss + BETA * self.commitment_loss


model = VQ()
x = torch.randn(5, 4)
log = []


def step():
    model(x).backward()
    log.append(model.commitment_loss.item())
'''

ATTRIBUTE_REASON = (
    "`self.codebook_loss` is an attribute, which code outside the function may read as a tensor: "
    "after the rewrite it holds the value without its gradient"
)


def test_found_with_an_unsafe_fix_that_rebuilds_the_attributes():
    result = _lint(SRC, ["GF002"], unsafe=True)
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(19, 32, False)]
    assert ATTRIBUTE_REASON in result.findings[0].message
    assert (
        "        commitment_loss_term = F.mse_loss(z_q, grad_scale(z, BETA))\n"
        "        self.commitment_loss = commitment_loss_term.detach().clone()\n"
        "        self.codebook_loss = commitment_loss_term.detach().clone()\n"
        "        rec = F.mse_loss(self.dec(z + (z_q - z).detach()), x)\n"
        "        return rec + (commitment_loss_term + (BETA * commitment_loss_term).detach())\n"
    ) in result.fixed.decode()
    assert _lint(SRC, ["GF002"]).fixed is None  # never applied as safe
    _unsafe_fix_is_exact(SRC, ["GF002"])


def test_attribute_and_name_terms_pair_up():
    src = SRC.replace("        self.codebook_loss = F.mse_loss(z_q, z.detach())\n", "        codebook_loss = F.mse_loss(z_q, z.detach())\n").replace(
        "rec + self.codebook_loss +", "rec + codebook_loss +"
    )
    result = _lint(src, ["GF002"], unsafe=True)
    assert [(f.line, f.fixable) for f in result.findings] == [(19, False)]
    assert "`self.commitment_loss` is an attribute" in result.findings[0].message
    assert "`codebook_loss`" not in result.findings[0].message
    _unsafe_fix_is_exact(src, ["GF002"])


def test_a_call_between_that_may_change_the_attribute_is_named():
    src = SRC.replace("        rec = F.mse_loss(", "        self.reset_stats()\n        rec = F.mse_loss(").replace(
        "model = VQ()", "VQ.reset_stats = lambda self: None\nmodel = VQ()"
    )
    result = _lint(src, ["GF002"], unsafe=True)
    assert [f.fixable for f in result.findings] == [False]
    assert "`self.reset_stats()` between the definitions and the sum may modify an operand" in result.findings[0].message


@pytest.mark.parametrize(
    "between",
    [
        "        self.commitment_loss = self.commitment_loss.clamp(max=1.0)\n",  # rebound
        "        self.commitment_loss += 1.0\n",  # changed
        "        self = model\n",  # the object rebound
    ],
    ids=["rebound", "augmented", "object_rebound"],
)
def test_what_changes_the_attribute_before_the_sum_keeps_it_out(between):
    src = SRC.replace("        rec = F.mse_loss(", between + "        rec = F.mse_loss(")
    assert _lint(src, ["GF002"], unsafe=True).findings == []
