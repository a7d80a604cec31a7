# GF003 safe merge wrong: `f = get` (an alias of a function returning h, built before the loop) counted as graph-free; the loop calls `f()`, the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    def get():
        return h
    f = get
    for step in range(3):
        l1 = (f() * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
