# GF003 safe merge wrong: `m.register_buffer('b', h)` was no store into `m` (only collecting methods and `m.x = v` were); the loop reads `m.b`, h's graph built before the loop, the merged backward frees it and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    m = nn.Module()
    m.register_buffer('b', h)
    for step in range(3):
        l1 = (m.b * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
