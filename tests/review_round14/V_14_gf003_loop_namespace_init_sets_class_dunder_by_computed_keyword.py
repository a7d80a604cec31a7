# GF003 safe merge wrong: `argparse.Namespace.__init__(Keeper, **{"__s" + "ub__": f})`, an initializer called unbound, sets each keyword as an attribute of what it is given, here a class of the file: `Keeper.__sub__` returns `buf`; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import argparse
import functools

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Keeper:
    pass


argparse.Namespace.__init__(Keeper, **{"__s" + "ub__": lambda self, other: other})


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = Keeper() - buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
