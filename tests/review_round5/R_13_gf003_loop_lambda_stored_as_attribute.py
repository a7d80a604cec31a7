# GF003 safe merge wrong: `fns.f = lambda: h` stored a lambda taken as graph-free into `fns`; the loop calls `fns.f()`, reads h (graph built before it), the merged backward frees it and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    fns = nn.ModuleDict()
    fns.f = lambda: h
    for step in range(3):
        l1 = (fns.f() * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
