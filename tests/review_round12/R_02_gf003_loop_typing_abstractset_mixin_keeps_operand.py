# GF003 safe merge wrong: `typing.AbstractSet` is `collections.abc.Set`, whose `__or__` a class of the file inherits (with `list`'s `__contains__`, `__iter__`, `__len__`): `K() | buf` is `K(rows of buf)`, views of `buf`, though typing was allowed whole; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import typing
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class K(list, typing.AbstractSet):
    pass


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = (K() | buf)[0]._base
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
