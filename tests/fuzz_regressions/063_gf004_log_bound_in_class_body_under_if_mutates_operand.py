# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF004
# differs: the same, between the passes: `log = staticmethod(halve)` under `if True:` in a class body, `tracker.log("p", p)` changes `p` in place.
import types
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
y = torch.randn(3, 4, 6)
K = 3.0


def halve(name, t):
    t.mul_(0.5)


class Tracker:
    if True:
        log = staticmethod(halve)


tracker = Tracker()


def mse(p, q):
    return (p - q).pow(2).mean()


def step():
    s = enc(x[1])
    p = pri(y[1])
    rec = (enc(x) - x).pow(2).mean()
    series_loss = mse(s, p.detach())
    tracker.log("p", p)
    prior_loss = mse(s.detach(), p)
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
