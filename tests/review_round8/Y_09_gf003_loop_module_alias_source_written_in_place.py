# GF003 safe merge wrong: `m2 = m` then `m.b.copy_(h)`: `m2` is `m`, whose buffer holds h's graph; `m2`'s value, a name, was proven from `m`'s bindings alone (in-place updates through `m` were not among them); the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    m = nn.Linear(3, 3)
    m.register_buffer("b", torch.zeros(3))
    m2 = m
    m.b.copy_(h)
    for step in range(3):
        l1 = (m2.b * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
