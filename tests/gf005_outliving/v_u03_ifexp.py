# In-file callers (review, stop 22): `(z if True else None).mul_(...)` writes into the name passed.
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    z = torch.ones(8, 1)
    (z if True else None).mul_(w.sum())
    inner(z)
    inner(z)
