# GF003 safe merge wrong: `.item()` was read as a Python value on any receiver, but a class of the file defines `item` (returning its tensor times 1): `buf` holds h's graph, the merged backward frees it, and the next iteration raises.
import torch


class Box:
    def __init__(self, t):
        self.t = t

    def item(self):
        return self.t * 1

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = Box(h).item()
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
