# In-file callers (review, stop 22): `operator.imul(z, w.sum())` writes into the name passed.
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)
import operator


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    z = torch.ones(8, 1)
    operator.imul(z, w.sum())
    inner(z)
    inner(z)
