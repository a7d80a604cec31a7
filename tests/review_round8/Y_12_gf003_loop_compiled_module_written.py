# GF003 safe merge wrong: `cm = torch.compile(m)` wraps `m` (its attributes are `m`'s), and `cm.b.copy_(h)` writes h's graph into `m`'s buffer (a torch callable given an object was taken as a read); the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    m = nn.Linear(3, 3)
    m.register_buffer("b", torch.zeros(3))
    cm = torch.compile(m)
    cm.b.copy_(h)
    for step in range(3):
        l1 = (m.b * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
