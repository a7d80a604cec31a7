# GF003 safe merge wrong: `[lambda: h for _ in range(2)]` counted as graph-free; the loop calls one and reads h (graph built before it), the merged backward frees it and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    fns = [lambda: h for _ in range(2)]
    for step in range(3):
        l1 = (fns[0]() * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
