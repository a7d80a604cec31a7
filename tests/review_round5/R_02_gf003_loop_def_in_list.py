# GF003 safe merge wrong: a `def` kept in a list (`fns = [get]`) counted as graph-free code; `get` returns h (graph built before the loop), the merged backward frees it and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    def get():
        return h
    fns = [get]
    for step in range(3):
        l1 = (fns[0]() * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
