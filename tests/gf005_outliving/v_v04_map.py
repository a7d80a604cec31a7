# In-file callers (review, stop 22): the function handed on as a value (`map(inner, [h, h])`).
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    h = (x @ w).tanh()
    list(map(inner, [h, h]))
