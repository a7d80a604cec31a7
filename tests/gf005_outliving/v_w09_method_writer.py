# In-file callers (review, stop 22): a method of the file writes into the name passed (`box.corrupt(z)`).
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


class Box:
    def corrupt(self, t):
        t.mul_(w.sum())


box = Box()


def step():
    z = torch.ones(8, 1)
    box.corrupt(z)
    inner(z)
    inner(z)
