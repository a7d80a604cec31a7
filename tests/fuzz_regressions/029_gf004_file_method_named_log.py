# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: `tracker.log("p", p)` where a class of the file defines `log` changing its argument: a method name on the harmless list is no longer trusted where the file defines a method of that name (before stop 19 too).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
y = torch.randn(3, 4, 6)
K = 3.0


class Tracker:
    def log(self, name, t):
        t.mul_(0.5)


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
