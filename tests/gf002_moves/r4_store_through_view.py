# `z.view(-1)[0] = 5.0` between the `if` and q_latent's definition changes z in place; not seen
# as a store into z (the target is a call's subscript). gap saves no operand, so the original runs.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc = nn.Linear(4, 4)
codebook = nn.Parameter(torch.randn(6, 4))
BETA = 0.25
SCALE = 2.0
USE_EMA = True
x = torch.randn(5, 4)
log = []


def gap(a, b):
    return ((a - b) ** 2).mean()


def step():
    global out
    z = enc(x)
    z_q = codebook[torch.cdist(z, codebook).argmin(1)]
    if USE_EMA:
        e_latent = gap(z_q.detach(), z)
    else:
        e_latent = gap(z_q.detach(), z) * SCALE
    z.view(-1)[0] = 5.0
    q_latent = gap(z_q, z.detach())
    vq = q_latent + BETA * e_latent
    vq.backward()
    out = vq.detach()
