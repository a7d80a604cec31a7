# GF003 safe merge wrong: a nested function binding `cur` under `nonlocal` (to h, graph built before the loop) was not among `cur`'s bindings; the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    cur = torch.zeros(3)
    def setcur():
        nonlocal cur
        cur = h
    setcur()
    for step in range(3):
        l1 = (cur * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
