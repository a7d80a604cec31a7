# GF003 safe merge wrong: `typing.Literal[buf]` keeps its index in `__args__`: `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import typing

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = typing.Literal[buf].__args__[0]
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
