# GF001 safe fix, wrong: the callee calls torch.mul with a ** mapping that holds out= (the detached operand, which shares y's memory): each evaluation halves y in place, twice in the original and once after the rewrite: y and x.grad differ.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)

def critic(a, b):
    torch.mul(b.detach(), 0.5, **{"out": b.detach()})
    return (a * b).sum()

def step():
    l1 = critic(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * critic(x, y.detach())
    l2.backward()

step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
print("y", [round(v, 4) for v in y.tolist()])
