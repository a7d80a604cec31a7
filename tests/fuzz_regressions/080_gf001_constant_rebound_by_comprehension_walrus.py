# Regression (stop 20, found while fixing the review's walrus cases; the fix was offered as safe).
# codes: GF001
# differs: a module constant tensor W rebound by a := in a module-level comprehension, which libcst's scopes do not record: constants.is_constant took W as the constant (scale.grad differs).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc_a = nn.Linear(6, 4)
enc_b = nn.Linear(6, 4)
batch = torch.randn(5, 6)
scale = nn.Parameter(torch.tensor(2.0))
W = torch.ones(4)
[W := scale * torch.ones(4) for _ in range(1)]


def crit(p, q):
    return F.mse_loss(p * W, q)


def step():
    fa = enc_a(batch)
    fb = enc_b(batch)
    l1 = crit(fa.detach(), fb)
    l1.backward(retain_graph=True)
    l2 = -crit(fa, fb.detach())
    l2.backward()
