# Review regression (stop 19: a review of the day's changes found it; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: `range(cfg.n)` where `n` is a property with a side effect: read twice, two bounds (IndexError).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(5, 4, 6)
class C:
    c = 2
    @property
    def n(self):
        C.c += 1
        return C.c
cfg = C()
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
    prior_loss = 0.0
    for u in range(cfg.n):
        prior_loss += mse(series[u].detach(), prior[u])
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
