# Regression (stop 20, found by the GF002 if/else helper; the fix was offered as safe and the rewrite raised).
# codes: GF002
# differs: `beta` bound after the earlier definition, where the one evaluation reads it: UnboundLocalError in the rewrite (stop 20).
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def step():
    q = F.mse_loss(a, b.detach())
    e = F.mse_loss(a.detach(), b)
    beta = 0.25
    loss = q + beta * e
    loss.backward()
