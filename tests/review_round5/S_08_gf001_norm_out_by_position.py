# GF001 safe fix, wrong: the callee passes torch.norm's out by position (torch.norm(t, p, dim, keepdim, out)), writing the norm into y's memory through the detached operand: twice in the original, once after the rewrite: y and x.grad differ.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)

def critic(a, b):
    torch.norm(b.detach(), 2, None, False, b.detach())
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
