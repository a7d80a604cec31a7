# GF003 safe merge wrong: `lin.register_forward_hook(lambda m, i, o: o + h)` before the loop was no store into `lin`; each `lin(w)` in the loop adds h (graph built before the loop), the merged backward frees it and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    lin = nn.Linear(3, 3)
    lin.register_forward_hook(lambda m, i, o: o + h)
    for step in range(3):
        l1 = (lin(w) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
