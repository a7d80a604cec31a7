"""GF002 with the straight-through estimator between the terms and the sum (issue 12).

VQ-VAE code computes both latent losses, rebinds `z_q = z + (z_q - z).detach()`
for the decoder, and sums the losses afterwards. The terms read the old `z_q`;
the one evaluation replaces the earlier definition, before the rebinding, so
the rewrite is exact (executed here). A rebinding between the two definitions
(the second term would read the new value) or an in-place store into an operand
after them still keeps the pattern out.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

SRC = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc = nn.Linear(4, 4)
dec = nn.Linear(4, 4)
codebook = nn.Parameter(torch.randn(6, 4))
BETA = 0.25
x = torch.randn(5, 4)


def step():
    z = enc(x)
    z_q = codebook[torch.cdist(z, codebook).argmin(1)]
    e_latent = F.mse_loss(z_q.detach(), z)
    q_latent = F.mse_loss(z_q, z.detach())
    z_q = z + (z_q - z).detach()
    rec = F.mse_loss(dec(z_q), x)
    loss = rec + q_latent + BETA * e_latent
    loss.backward()
'''


def test_found_and_exact():
    result = _lint(SRC, ["GF002"])
    assert [(f.code, f.line, f.col, f.fixable) for f in result.findings] == [("GF002", 16, 16, True)]
    fixed = result.fixed.decode()
    assert "    e_latent = F.mse_loss(z_q, grad_scale(z, BETA))\n    z_q = z + (z_q - z).detach()\n" in fixed
    assert "    loss = rec + (e_latent + (BETA * e_latent).detach())\n" in fixed
    _safe_fix_is_exact(SRC, ["GF002"])


@pytest.mark.parametrize(
    "old,new",
    [
        # rebound between the two definitions: the second term reads another `z_q`
        ("    q_latent = F.mse_loss(z_q, z.detach())\n    z_q = z + (z_q - z).detach()\n",
         "    z_q = z + (z_q - z).detach()\n    q_latent = F.mse_loss(z_q, z.detach())\n"),
        # an operand changed in place after the definitions
        ("    z_q = z + (z_q - z).detach()\n", "    z_q.data.mul_(1.0)\n"),
    ],
    ids=["rebound_between_definitions", "inplace_after"],
)
def test_what_changes_an_operand_keeps_it_out(old, new):
    assert old in SRC
    src = SRC.replace(old, new)
    assert _lint(src, ["GF002"], unsafe=True).findings == []
    _safe_fix_is_exact(src, ["GF001", "GF002", "GF003"])


def test_the_rebinding_value_is_still_scanned():
    # `z_q = bump(z_q)`: a call gradfix cannot see may change `z_q` in place before it rebinds it.
    src = SRC.replace("    z_q = z + (z_q - z).detach()\n", "    z_q = bump(z_q)\n").replace(
        "BETA = 0.25\n", "BETA = 0.25\n\n\ndef bump(t):\n    t.data.mul_(1.0)\n    return t\n"
    )
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`bump()` between the definitions and the sum may modify an operand" in result.findings[0].message
