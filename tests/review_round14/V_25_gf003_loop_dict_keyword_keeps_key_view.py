# GF003 safe merge wrong: `dict` was taken to read a key view it is given, but as a keyword's value it keeps the view: `dict(k={}.keys())["k"] ^ buf` is a set of the rows of `buf`, views of it; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = next(iter(dict(k={}.keys())["k"] ^ buf))._base
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
