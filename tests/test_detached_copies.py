"""A name rebuilt as the bare detached value of the one evaluation is a copy (fuzz, stop 18).

`s = kl_shared` and `p = kl_shared.detach()` share memory where the original's
two evaluations were two tensors: a later in-place update of one (`s += reg`)
changed the other, and a safe fix changed a value. Every rule that binds a name
to the bare detached value now binds a copy (`.detach().clone()`); each case
below updates a name in place after the pattern, and the rewrite is executed.
"""

from __future__ import annotations

from tests.test_field_cases import _lint, _safe_fix_is_exact

GF004_STRAIGHT = '''\
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
log = []


def step():
    x, y = a * 2, b * 3
    s = F.mse_loss(x, y.detach())
    p = F.mse_loss(x.detach(), y)
    s += 0.5 * (x ** 2).mean()
    loss1 = s
    loss2 = 2.0 * p
    loss1.backward(retain_graph=True)
    loss2.backward()
    log.append((s.item(), p.item()))
'''


def test_gf004_straight_copy():
    fixed = _lint(GF004_STRAIGHT, ["GF004"]).fixed.decode()
    assert "    s = mse_loss_shared\n    p = mse_loss_shared.detach().clone()\n" in fixed
    _safe_fix_is_exact(GF004_STRAIGHT, ["GF004"])


GF004_RESET = '''\
import torch

torch.set_default_dtype(torch.float64)
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
log = []


def dist(u, v):
    return ((u - v) ** 2).mean()


def step():
    xs = [a * 2.0, a + 0.25]
    ys = [b * 1.5, b + 0.25]
    for i in range(len(xs)):
        if i == 0:
            s = dist(ys[i], xs[i].detach())
            p = dist(ys[i].detach(), xs[i])
        else:
            s += dist(ys[i], xs[i].detach())
            p += dist(ys[i].detach(), xs[i])
    loss = 0.5 * s + 0.5 * p
    loss.backward()
    log.append((s.item(), p.item(), loss.item()))
'''


def test_gf004_reset_twin_copy():
    # The fuzz case: `s = dist_shared.detach()` in the reset branch shared memory with `p`, and the
    # next iteration's `p += ...` changed `s`.
    fixed = _lint(GF004_RESET, ["GF004"]).fixed.decode()
    assert "            s = dist_shared\n            p = dist_shared.detach().clone()\n" in fixed
    _safe_fix_is_exact(GF004_RESET, ["GF004"])


GF001 = '''\
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
log = []


def step():
    x, y = a * 2, b * 3
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = F.mse_loss(x, y.detach())
    l2.backward()
    l1 += 1.0
    log.append((l1.item(), l2.item()))
'''


def test_gf001_rebuilt_losses_copy():
    fixed = _lint(GF001, ["GF001"]).fixed.decode()
    assert ".detach().clone()" in fixed
    _safe_fix_is_exact(GF001, ["GF001"])


GF002 = '''\
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
z_e0 = torch.randn(8, 4, requires_grad=True)
z_q0 = torch.randn(8, 4, requires_grad=True)
log = []


def step():
    z_e, z_q = z_e0 * 2, z_q0 * 3
    q_latent = F.mse_loss(z_q, z_e.detach())
    e_latent = F.mse_loss(z_q.detach(), z_e)
    loss = q_latent + 0.25 * e_latent
    loss.backward()
    q_latent += 1.0
    log.append((q_latent.item(), e_latent.item()))
'''


def test_gf002_rebuilt_terms_copy():
    fixed = _lint(GF002, ["GF002"]).fixed.decode()
    assert ".detach().clone()" in fixed
    _safe_fix_is_exact(GF002, ["GF002"])
