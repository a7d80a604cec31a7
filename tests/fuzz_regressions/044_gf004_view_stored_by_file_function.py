# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: a function of the file stores its argument in a module list (`keep(P[1])`: `Z.append(v)`), and the
#   operand is read from it (`q = Z[-1:]`); `P` changed between the terms changes the operand. A call of a
#   function of the file now binds its arguments to the globals it reads (it may keep them there).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
x = torch.randn(3, 4, 6)
y = torch.randn(3, 4, 6)
K = 3.0
Z = []


def keep(v):
    Z.append(v)


def mse(p, q):
    return (p - q).pow(2).mean()


def step():
    s = enc(x[1])
    P = pri(y)
    keep(P[1])
    q = Z[-1:]
    rec = (enc(x) - x).pow(2).mean()
    series_loss = mse(s, q[0].detach())
    P += 1.0
    prior_loss = mse(s.detach(), q[0])
    loss1 = rec - K * series_loss
    loss2 = rec + K * prior_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
