# GF003 safe merge wrong: `seq = nn.Sequential(m)` then `m.b.copy_(h)`: `seq` holds `m`, whose buffer holds h's graph (in-place updates through `m` were not among its values); the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    m = nn.Linear(3, 3)
    m.register_buffer("b", torch.zeros(3))
    seq = nn.Sequential(m)
    m.b.copy_(h)
    for step in range(3):
        l1 = (seq[0].b * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
