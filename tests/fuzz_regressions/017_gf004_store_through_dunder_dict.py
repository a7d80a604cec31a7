# Review regression (stop 19: a review of the day's changes found it; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: `box.__dict__['p'] = ...` between the evaluations changes `box.p` (before stop 19 too): `__dict__`
#   paths now overlap every attribute of the object.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
K = 3.0


class Box:
    pass


box = Box()


def mse(p, q):
    return (p - q).pow(2).mean()


def step():
    box.s = enc(x[1])
    box.p = pri(x[1])
    rec = (enc(x) - x).pow(2).mean()
    series_loss = mse(box.s, box.p.detach())
    box.__dict__["p"] = box.p * 2.0
    prior_loss = mse(box.s.detach(), box.p)
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
