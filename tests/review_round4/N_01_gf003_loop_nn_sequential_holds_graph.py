# GF003 safe merge wrong: nn.Sequential(...) is taken graph-free whatever its arguments, but it holds a module of the file holding h (graph built before the loop); the merged backward frees it, the next iteration raises.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Holder(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.h = h

    def forward(self, x):
        return x * self.h


def train():
    h = (w * 2).tanh()
    seq = nn.Sequential(Holder(h))
    for step in range(3):
        l1 = seq(w).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
