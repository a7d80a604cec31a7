# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: a module class of the file inside `nn.Sequential` changes an operand in its forward, called between the terms: torch.nn containers of code gradfix has not read are no longer harmless (before stop 19 too).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
y = torch.randn(3, 4, 6)
z = torch.randn(3, 4, 6)
K = 3.0
box = {}


class Bump(nn.Module):
    def forward(self, t):
        box["p"].add_(1.0)
        return t


aux = nn.Sequential(nn.Linear(6, 6), Bump())


def mse(p, q):
    return (p - q).pow(2).mean()


def step():
    s = enc(x[1])
    p = pri(y[1])
    box["p"] = p
    rec = (enc(x) - x).pow(2).mean()
    series_loss = mse(s, p.detach())
    h = aux(z)
    prior_loss = mse(s.detach(), p)
    loss1 = rec - K * series_loss + 0.0 * h.sum()
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
