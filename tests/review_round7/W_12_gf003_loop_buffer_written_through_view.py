# GF003 safe merge wrong: `bv = m.b.view(-1); bv.copy_(h)` writes h's graph into the buffer `m.b` through a view of it bound to another name (a method called on a part of a torch object was taken as a read); the merged backward frees h's graph (built before the loop) and the next iteration raises.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    m = nn.Module()
    m.register_buffer("b", torch.zeros(3))
    bv = m.b.view(-1)
    bv.copy_(h)
    for step in range(3):
        l1 = (m.b * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
