# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: the same in a nested loop.
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
    for u in range(len(prior)):
        for h in range(2):
            series_loss += kl(series[u][h], prior[u][h].detach())
            u = 2
            prior_loss += kl(series[u][h].detach(), prior[u][h])
    loss1 = rec - K * series_loss / len(prior)
    loss2 = rec + K * prior_loss / len(prior)
    loss1.backward(retain_graph=True)
    loss2.backward()
