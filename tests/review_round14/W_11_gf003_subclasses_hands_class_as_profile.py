# GF003 safe merge wrong: `Hook.__subclasses__()[0]` reaches a class of the file by no name of it (round 13 followed `type(x)` and `x.__class__` only): `sys.setprofile(...)` hands `Prof` on, whose `__init__` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Hook:
    pass


class Prof(Hook):
    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


sys.setprofile(Hook.__subclasses__()[0])


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
