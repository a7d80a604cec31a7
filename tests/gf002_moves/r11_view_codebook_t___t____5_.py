# r9 with `z_q` a view through methods of the codebook (review, stop 22): a store into the codebook changes it.



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
    z = enc(x)
    z_q = codebook.t().t()[:5]
    q_latent = gap(z_q, z.detach())
    with torch.no_grad():
        codebook[0] = 0.0
    if USE_EMA:
        e_latent = gap(z_q.detach(), z)
    else:
        e_latent = gap(z_q.detach(), z) * SCALE
    vq = q_latent + BETA * e_latent
    vq.backward()
