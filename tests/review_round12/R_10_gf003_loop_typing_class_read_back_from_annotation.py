# GF003 safe merge wrong: an annotation is a value the program reads back: `hint.__annotations__["x"]` is `typing.AbstractSet` (`collections.abc.Set`), a base of a class of the file with `list`; `buf - K()` runs `Set.__rsub__`, which makes `K(rows of buf)`, views of `buf`; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import typing

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def hint(x: typing.AbstractSet):
    return x


class K(list, hint.__annotations__["x"]):
    pass


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = (buf - K())[0]._base
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
