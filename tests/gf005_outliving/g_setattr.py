import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


import torch.nn as nn
box = nn.Module()
setattr(box, "h", (x @ w).tanh())


def step():
    loss = box.h.pow(2).mean()
    loss.backward(retain_graph=True)
