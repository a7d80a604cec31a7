# Review regression (review of stop 20: GF004 comprehensions over names; the fix was offered as safe).
# codes: GF004
# differs: `zip` is a function of the file giving other pairs on each call: loop_shapes.iterated_sequences takes `zip(...)`/`enumerate(...)` by their text, not as the builtins, so both comprehensions are taken to see the same items.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
xs = torch.randn(3, 4, 6)
k = 3.0


def kl(p, q):
    return (p.softmax(-1) * (p.log_softmax(-1) - q.log_softmax(-1))).sum(-1).mean()

import builtins

calls = [0]


def zip(a, b):
    calls[0] += 1  # a zip of the file: each call gives other pairs
    return builtins.list(builtins.zip(a, b))[calls[0] % 2 :]

def step():
    series, prior = [enc(xs[i]) for i in range(3)], [pri(xs[i]) for i in range(3)]

    rec = (enc(xs) - xs).pow(2).mean()
    s_loss = sum([kl(s, p.detach()) for s, p in zip(series, prior)])
    p_loss = sum([kl(s.detach(), p) for s, p in zip(series, prior)])
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
