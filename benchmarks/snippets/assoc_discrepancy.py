"""Association-discrepancy minimax (anomaly-transformer style).

An attention layer gives a series association (softmax of q·k) and a
learned Gaussian prior association (per-head width sigma), both
batch × heads × L × L distributions.  Their symmetric KL is maximised for the
series branch and minimised for the prior branch, each against the other
detached: two losses, two backward calls.

`sym_kl` is a module-level helper using only torch ops, so the fix is SAFE.

Size: GRADFIX_BENCH_SIZE=small|large (default small).
"""
import math
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("GRADFIX_BENCH_SIZE", "small")
# batch, heads, window length, model width
BATCH, HEADS, L, DM = {"small": (8, 4, 64, 64), "large": (16, 8, 128, 128)}[SIZE]
DK = DM // HEADS
K = 3.0

# No bias on q/k: a key bias cannot change a softmax over keys, so its gradient
# is exactly zero and Adam would turn rounding noise there into full-size steps.
q_proj = nn.Linear(DM, DM, bias=False)
k_proj = nn.Linear(DM, DM, bias=False)
sigma_proj = nn.Linear(DM, HEADS)
opt = torch.optim.Adam([*q_proj.parameters(), *k_proj.parameters(), *sigma_proj.parameters()], lr=1e-4)
window = torch.randn(BATCH, L, DM)
_idx = torch.arange(L, dtype=torch.float32)
DIST2 = (_idx[:, None] - _idx[None, :]) ** 2  # L x L squared distances


def assoc_kl(p, q):
    res = p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))
    return torch.mean(torch.sum(res, dim=-1))


def sym_kl(p, q):
    return assoc_kl(p, q) + assoc_kl(q, p)


def step():
    opt.zero_grad()
    q = q_proj(window).view(BATCH, L, HEADS, DK).transpose(1, 2)
    k = k_proj(window).view(BATCH, L, HEADS, DK).transpose(1, 2)
    series = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(DK), dim=-1)
    sigma = torch.sigmoid(sigma_proj(window) * 5) + 1e-5
    sigma = (torch.pow(3, sigma) - 1).transpose(1, 2).unsqueeze(-1)  # B x H x L x 1
    prior = torch.exp(-DIST2 / (2 * sigma**2)) / (math.sqrt(2 * math.pi) * sigma)
    prior = prior / prior.sum(dim=-1, keepdim=True)
    series_loss = -K * sym_kl(series, prior.detach())
    series_loss.backward(retain_graph=True)
    prior_loss = K * sym_kl(series.detach(), prior)
    prior_loss.backward()
    opt.step()
