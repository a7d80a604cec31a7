# r4 with q_latent defined above the `if`: `z.view(-1)[0] = ...` between is a store into z.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(4, 4)
codebook = nn.Parameter(torch.randn(6, 4))
BETA = 0.25
SCALE = 2.0
USE_EMA = True
x = torch.randn(5, 4)


def gap(a, b):
    return ((a - b) ** 2).mean()


def step():
    z = enc(x)
    z_q = codebook[torch.cdist(z, codebook).argmin(1)]
    q_latent = gap(z_q, z.detach())
    z.view(-1)[0] = 5.0
    if USE_EMA:
        e_latent = gap(z_q.detach(), z)
    else:
        e_latent = gap(z_q.detach(), z) * SCALE
    vq = q_latent + BETA * e_latent
    vq.backward()
    global out
    out = vq.detach()
