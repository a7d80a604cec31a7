# GF003 safe merge wrong: `m2 = m.train(); m2.b.copy_(h)`: `train()` returns the module itself, so the buffer `m.b` gets h's graph under another name; the merged backward frees it (built before the loop) and the next iteration raises.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    m = nn.Module()
    m.register_buffer("b", torch.zeros(3))
    m2 = m.train()
    m2.b.copy_(h)
    for step in range(3):
        l1 = (m.b * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
