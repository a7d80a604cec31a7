"""GF002 with a term reached through names (issue 12): `commitment = beta * e_latent`, then the sum.

VQ-VAE code often weighs the commitment loss in a statement of its own and sums the weighted
name. GF002 follows a name whose definition is a coefficient times another name (up to three
such links) down to the call. The one evaluation replaces the earlier call's definition; a link
nothing else reads is removed, a link read elsewhere is kept (it reads the call's name, rebuilt
detached). Every rewrite here is executed against the original.
"""

from __future__ import annotations

import pytest

from tests.test_field_cases import _lint, _safe_fix_is_exact

HEAD = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc = nn.Linear(4, 4)
dec = nn.Linear(4, 4)
codebook = nn.Parameter(torch.randn(6, 4))
BETA = 0.25
x = torch.randn(5, 4)
log = []


def step():
    z = enc(x)
    z_q = codebook[torch.cdist(z, codebook).argmin(1)]
'''

TAIL = '''\
    rec = F.mse_loss(dec(z + (z_q - z).detach()), x)
    loss = rec + vq
    loss.backward()
'''


def _src(body: str) -> str:
    return HEAD + body + TAIL


def test_one_link_removed_when_nothing_else_reads_it():
    src = _src(
        "    e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    commitment = BETA * e_latent\n"
        "    vq = q_latent + commitment\n"
    )
    result = _lint(src, ["GF002"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(17, 16, True)]
    fixed = result.fixed.decode()
    assert fixed.endswith(
        "    e_latent = F.mse_loss(z_q, grad_scale(z, BETA))\n"
        "    vq = e_latent + (BETA * e_latent).detach()\n" + TAIL
    )
    _safe_fix_is_exact(src, ["GF002"])


def test_link_read_as_value_is_kept_and_reads_the_rebuilt_name():
    src = _src(
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    commitment = e_latent * BETA\n"
        "    log.append(commitment.item())\n"
        "    vq = q_latent + commitment\n"
    )
    result = _lint(src, ["GF002"])
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(18, 16, True)]
    fixed = result.fixed.decode()
    assert fixed.endswith(
        "    q_latent = F.mse_loss(z_q, grad_scale(z, BETA))\n"
        "    e_latent = q_latent.detach().clone()\n"
        "    commitment = e_latent * BETA\n"
        "    log.append(commitment.item())\n"
        "    vq = q_latent + (BETA * q_latent).detach()\n" + TAIL
    )
    _safe_fix_is_exact(src, ["GF002"])


def test_three_links_multiply_their_coefficients():
    src = _src(
        "    e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    a = BETA * e_latent\n"
        "    b = a / 2\n"
        "    c = -b\n"
        "    vq = q_latent - 3 * c\n"
    )
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [True]
    assert result.fixed.decode().endswith(
        "    e_latent = F.mse_loss(z_q, grad_scale(z, 1.5 * BETA))\n"
        "    vq = e_latent + (1.5 * BETA * e_latent).detach()\n" + TAIL
    )
    _safe_fix_is_exact(src, ["GF002"])


def test_four_links_are_not_followed():
    src = _src(
        "    e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    a = BETA * e_latent\n"
        "    b = a / 2\n"
        "    c = -b\n"
        "    d = 2 * c\n"
        "    vq = q_latent + d\n"
    )
    assert _lint(src, ["GF002"], unsafe=True).findings == []


def test_link_read_as_tensor_makes_the_fix_unsafe():
    src = _src(
        "    e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    commitment = BETA * e_latent\n"
        "    aux = commitment * 0.1\n"
        "    vq = q_latent + commitment + aux\n"
    )
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`commitment` is also read as a tensor (line 20)" in result.findings[0].message


@pytest.mark.parametrize(
    "link",
    [
        "    commitment = BETA * e_latent\n    commitment = commitment.clamp(max=1.0)\n",  # rebound before the sum
        "    commitment = BETA * e_latent.clamp(max=1.0)\n",  # not a coefficient times a name
        "    commitment = e_latent * e_latent\n",  # a product of terms
        "    commitment = e_latent * q_latent\n",
    ],
    ids=["rebound", "nonlinear_link", "square", "product"],
)
def test_links_that_are_not_linear_are_not_followed(link):
    src = _src(
        "    e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    q_latent = F.mse_loss(z_q, z.detach())\n" + link + "    vq = q_latent + commitment\n"
    )
    assert _lint(src, ["GF002"], unsafe=True).findings == []


def test_an_operand_changed_between_the_definitions_keeps_it_out():
    src = _src(
        "    e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    commitment = BETA * e_latent\n"
        "    z = z * 2\n"
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    vq = q_latent + commitment\n"
    )
    assert _lint(src, ["GF002"], unsafe=True).findings == []


def test_a_read_after_the_name_is_bound_anew_is_no_reason():
    # `e_latent` is rebound after the sum; the later tensor read sees the new value (issue 12:
    # reads resolved by position, not by name).
    src = _src(
        "    e_latent = F.mse_loss(z_q.detach(), z)\n"
        "    q_latent = F.mse_loss(z_q, z.detach())\n"
        "    vq = q_latent + BETA * e_latent\n"
    ) + "    e_latent = (z_q - z).abs().mean()\n    log.append(e_latent * 1.0)\n"
    result = _lint(src, ["GF002"])
    assert [f.fixable for f in result.findings] == [True], [f.message for f in result.findings]
    _safe_fix_is_exact(src, ["GF002"])
    # Before the rebinding the same read keeps the reason.
    before = src.replace(
        "    e_latent = (z_q - z).abs().mean()\n    log.append(e_latent * 1.0)\n",
        "    log.append(e_latent * 1.0)\n    e_latent = (z_q - z).abs().mean()\n",
    )
    result = _lint(before, ["GF002"])
    assert [f.fixable for f in result.findings] == [False]
    assert "`e_latent` is also read as a tensor (line 23)" in result.findings[0].message
