# Review regression (stop 19: a review of the day's changes found it; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: `range(cfg.n)` with `cfg.__dict__['n'] = 4` between two fused loops: the second loop ran past the
#   list the first filled (IndexError). Fused loops now need a bound read from names only.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(5, 4, 6)
class C: pass
cfg = C()
cfg.n = 3
K = 3.0
log = []


def mse(p, q):
    return (p - q).pow(2).mean()


def step():
    S = enc(x)
    P = pri(x)
    series = [S[i] for i in range(5)]
    prior = [P[i] for i in range(5)]
    rec = (enc(x) - x).pow(2).mean()
    series_loss = 0.0
    for u in range(cfg.n):
        series_loss += mse(series[u], prior[u].detach())
    cfg.__dict__['n'] = 4
    prior_loss = 0.0
    for u in range(cfg.n):
        prior_loss += mse(series[u].detach(), prior[u])
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
