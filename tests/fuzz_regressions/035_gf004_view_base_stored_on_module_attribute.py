# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: `sys.stash = P; p = sys.stash[1]`: the imported-receiver skip applied to assignments too (stop 19).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
y = torch.randn(3, 4, 6)
K = 3.0


def mse(p, q):
    return (p - q).pow(2).mean()


import sys

def step():
    S = enc(x)
    P = pri(y)
    sys.stash = P
    s = S[1]
    p = sys.stash[1]
    rec = (enc(x) - x).pow(2).mean()
    series_loss = mse(s, p.detach())
    P += 1.0
    prior_loss = mse(s.detach(), p)
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
