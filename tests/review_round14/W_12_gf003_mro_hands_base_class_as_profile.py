# GF003 safe merge wrong: `Quiet.__mro__[1]` reaches the base class `Prof` by no name of it read as a value (`Quiet` is read as an attribute's receiver only): `sys.setprofile(...)` hands it on, whose `__init__` reads `w.grad` at the `print` between the passes: `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof:
    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


class Quiet(Prof):
    pass


sys.setprofile(Quiet.__mro__[1])


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("x")
    l2.backward()


if __name__ == "__main__":
    step()
    sys.setprofile(None)
    print(seen)
    print(w.grad.tolist())
