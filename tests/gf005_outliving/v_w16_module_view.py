# In-file callers (review, stop 22): a module-level view of the module-level name passed is written into.
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    inner(x)
    inner(x)


xv = x[:]
xv.mul_(w.sum())
