# In a loop, `hist.append(q_latent)` at the top reads the previous iteration's q_latent as a
# tensor; after the fix that tensor is the one evaluation, carrying e_latent's gradient to z too.
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


def step():
    q_latent = torch.zeros(())
    hist = []
    total = 0
    for i in range(3):
        hist.append(q_latent)
        z = enc(x * (i + 1))
        z_q = codebook[torch.cdist(z, codebook).argmin(1)]
        if USE_EMA:
            e_latent = F.mse_loss(z_q.detach(), z)
        else:
            e_latent = F.mse_loss(z_q.detach(), z) * SCALE
        q_latent = F.mse_loss(z_q, z.detach())
        vq = q_latent + BETA * e_latent
        total = total + vq
    (total + sum(hist)).backward()
