# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: a view through `T.flatten(p)` with `import torch as T` (before stop 19 too).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
K = 3.0


def mse(p, q):
    return (p - q).pow(2).mean()


import torch as T

def step():
    S = enc(x)
    P = pri(x)
    s = S[1]
    p = P[1]
    q = T.flatten(p)
    rec = (enc(x) - x).pow(2).mean()
    series_loss = mse(s, p.detach())
    q += 1.0
    prior_loss = mse(s.detach(), p)
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
