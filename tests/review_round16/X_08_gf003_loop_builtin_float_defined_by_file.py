# GF003 safe merge wrong: `float(h)` was read as a Python number by the builtin's name, but the file defines `float` (returning `t * 1`): `buf` holds h's graph, the merged backward frees it, and the next iteration raises.
import torch


def float(t):
    return t * 1

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = float(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
