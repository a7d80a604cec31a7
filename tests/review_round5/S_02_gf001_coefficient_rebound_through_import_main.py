# GF001 safe fix, wrong: the coefficient BETA is bound once to a number, but the file imports __main__, its own module object, and rebinds BETA through it to a tensor that requires grad (a binding no scope analysis sees): BETA's gradient is lost after the rewrite.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)

BETA = 0.5

def critic(a, b):
    return (a * b).sum()

import __main__
__main__.BETA = torch.tensor(0.5, requires_grad=True)

def step():
    l1 = critic(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -BETA * critic(x, y.detach())
    l2.backward()

step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
print("BETA.grad", BETA.grad)
