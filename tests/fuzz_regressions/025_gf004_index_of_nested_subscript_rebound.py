# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: `u` rebound between two terms reading `series[u][0]`: the inner index of a double subscript was not read (before stop 19 too).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 2, 4, 6)
K = 3.0


def kl(p, q):
    return (p * (torch.log(p + 1e-4) - torch.log(q + 1e-4))).sum(-1).mean()


def step():
    series = [torch.softmax(enc(x[i]), -1) for i in range(3)]
    prior = [torch.softmax(pri(x[i]), -1) for i in range(3)]
    rec = (enc(x) - x).pow(2).mean()
    series_loss = 0.0
    prior_loss = 0.0
    u = 0
    series_loss += kl(series[u][0], prior[u][0].detach())
    u = 2
    prior_loss += kl(series[u][0].detach(), prior[u][0])
    loss1 = rec - K * series_loss / len(prior)
    loss2 = rec + K * prior_loss / len(prior)
    loss1.backward(retain_graph=True)
    loss2.backward()
