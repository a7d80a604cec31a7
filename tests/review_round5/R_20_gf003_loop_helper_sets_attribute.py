# GF003 safe merge wrong: a helper `put(m, h)` sets `m.b = h` (graph built before the loop) on an nn.Module handed to it; the loop reads `m.b`, the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as parametrize

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Holder(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.h = h

    def forward(self, x):
        return x + self.h


def train():
    h = (w * 2).tanh()
    m = nn.Module()
    def put(obj, v):
        obj.b = v
    put(m, h)
    for step in range(3):
        l1 = (m.b * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
