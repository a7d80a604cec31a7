# In-file callers (review, stop 22): the name passed is imported inside the caller from a module holding a graph.
import sys
sys.path.insert(0, "/tmp/rv32")
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    from shared_graph import h as z
    inner(z)
    inner(z)
