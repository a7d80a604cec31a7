# Review regression (stop 19: a review of the day's changes found it; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: the same between two GF004 terms, without loops (before stop 19 too).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
K = 3.0


def mse(p, q):
    return (p - q).pow(2).mean()


def step():
    series = [enc(x[i]) for i in range(3)]
    prior = [pri(x[i]) for i in range(3)]
    rec = (enc(x) - x).pow(2).mean()
    match prior:
        case [_, m1, _]:
            pass
    series_loss = mse(series[1], prior[1].detach())
    m1 += 1.0
    prior_loss = mse(series[1].detach(), prior[1])
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
