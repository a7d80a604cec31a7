# Near miss (safe, exact): bases that name no tensor class (`Base = torch.nn.Module`, a `namedtuple`, `Generic[T]`) and special methods bound to inert values (`__radd__ = __add__` of a method that keeps nothing, `__hash__ = None`, `__slots__`).
from collections import namedtuple
from typing import Generic, TypeVar

import torch

torch.manual_seed(0)
T = TypeVar("T")
Base = torch.nn.Module
w = torch.randn(3, requires_grad=True)


class Net(Base):
    def __init__(self):
        super().__init__()
        self.scale = 2.0


class Pair(namedtuple("Pair", "a b")):
    __slots__ = ()


class Box(Generic[T]):
    __hash__ = None

    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return float(other.item()) + self.v

    __radd__ = __add__


net = Net()
box = Box(1.0)


def step():
    l1 = (w * net.scale).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    return l1 + box


def train():
    return step(), Pair(1, 2).a


if __name__ == "__main__":
    print(train())
    print(w.grad.tolist())
