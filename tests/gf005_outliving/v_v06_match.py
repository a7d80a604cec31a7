# In-file callers (review, stop 22): a match capture binds a graph into the name passed.
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)
z = torch.zeros(8, 1)


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    z = torch.zeros(8, 1)
    match (x @ w).tanh():
        case z:
            pass
    inner(z)
    inner(z)
