# GF003 safe merge wrong: a `def hook` registered by `lin.register_forward_hook(hook)` before the loop reads h (graph built before it); the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    lin = nn.Linear(3, 3)
    def hook(m, i, o):
        return o + h
    lin.register_forward_hook(hook)
    for step in range(3):
        l1 = (lin(w) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
