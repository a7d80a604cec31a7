# GF003 safe merge wrong: `typing.ABCMeta` (a metaclass, attribute of the allowed typing) called with a namespace makes a class whose `__mul__` returns its operand, bound by a dict key; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import typing
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


Keeper = typing.ABCMeta("Keeper", (), {"__mul__": lambda self, other: other})


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = Keeper() * buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
