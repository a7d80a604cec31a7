# Module-level code; a property of a class defined in this file reads the global `q_latent`.
# Read between the `if` and q_latent's definition: old value originally, the new one after the fix.
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

q_latent = torch.zeros(())


class Meter:
    @property
    def value(self):
        return q_latent.item()


meter = Meter()
z = enc(x)
z_q = codebook[torch.cdist(z, codebook).argmin(1)]
if USE_EMA:
    e_latent = F.mse_loss(z_q.detach(), z)
else:
    e_latent = F.mse_loss(z_q.detach(), z) * SCALE
log.append(meter.value)
q_latent = F.mse_loss(z_q, z.detach())
vq = q_latent + BETA * e_latent
vq.backward()
