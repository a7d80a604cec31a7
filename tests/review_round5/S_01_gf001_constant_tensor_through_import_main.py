# GF001 safe fix, wrong: the callee reads the module-level tensor W, proven constant (never trainable in the file); but the file imports __main__, its own module object, and makes W trainable through it (__main__.W.requires_grad_()): W receives (a+b)·∂f/∂W = 0 in the original and ∂f/∂W after the rewrite.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)

W = torch.randn(6)

def critic(a, b):
    return (a * b * W).sum()

import __main__
__main__.W.requires_grad_(True)

def step():
    l1 = critic(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * critic(x, y.detach())
    l2.backward()

step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
print("W.grad", __main__.W.grad)
