# Review regression (stop 19: a review of the day's changes found it; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: `match prior: case [_, m1, _]:` then `m1 += 1.0` between fused loops: a name a `case` pattern binds
#   may be part of the subject (now tracked as an alias).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
K = 3.0
log = []


def mse(p, q):
    return (p - q).pow(2).mean()


def step():
    S = enc(x)
    P = pri(x)
    series = [S[i] for i in range(3)]
    prior = [P[i] for i in range(3)]
    match prior:
        case [_, m1, _]:
            pass
    rec = (enc(x) - x).pow(2).mean()
    series_loss = 0.0
    for u in range(len(prior)):
        series_loss += mse(series[u], prior[u].detach())
    m1 += 1.0
    prior_loss = 0.0
    for u in range(len(prior)):
        prior_loss += mse(series[u].detach(), prior[u])
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
