# Review regression (review of stop 20: GF004 comprehensions over names; the fix was offered as safe).
# codes: GF004
# differs: `list` is a function of the file returning an iterator: merge._is_sequence takes `list(...)` (and `tuple(...)`) by its text, not as the builtin, so `series` is "proven" a list and the first comprehension exhausts it.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
xs = torch.randn(3, 4, 6)
k = 3.0


def kl(p, q):
    return (p.softmax(-1) * (p.log_softmax(-1) - q.log_softmax(-1))).sum(-1).mean()

def list(v):
    return iter(v)

def step():
    series, prior = list([enc(xs[i]) for i in range(3)]), list([pri(xs[i]) for i in range(3)])

    rec = (enc(xs) - xs).pow(2).mean()
    s_loss = sum([kl(s, p.detach()) for s, p in zip(series, prior)])
    p_loss = sum([kl(s.detach(), p) for s, p in zip(series, prior)])
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
