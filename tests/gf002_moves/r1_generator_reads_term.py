# A generator made before the `if` reads `q_latent` lazily; consumed between the `if` and
# q_latent's definition it sees the old value in the original, the moved evaluation in the fix.
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
    z = enc(x)
    z_q = codebook[torch.cdist(z, codebook).argmin(1)]
    q_latent = torch.zeros(())
    pending = (q_latent.item() for _ in range(1))
    if USE_EMA:
        e_latent = F.mse_loss(z_q.detach(), z)
    else:
        e_latent = F.mse_loss(z_q.detach(), z) * SCALE
    log.extend(pending)
    q_latent = F.mse_loss(z_q, z.detach())
    vq = q_latent + BETA * e_latent
    vq.backward()
