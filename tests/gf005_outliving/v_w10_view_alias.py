# In-file callers (review, stop 22): a view of the name passed is written into (`v = z[:]; v.mul_(...)`).
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    z = torch.ones(8, 1)
    v = z[:]
    v.mul_(w.sum())
    inner(z)
    inner(z)
