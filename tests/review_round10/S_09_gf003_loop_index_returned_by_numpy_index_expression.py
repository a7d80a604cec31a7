# GF003 safe merge wrong: numpy's `np.s_[buf]` returns its index, `buf` itself: a subscript of an imported object proven new by the file's special methods only; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import numpy as np
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = np.s_[buf]
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
