# GF003 safe merge wrong: a `super` object gives the class it was made with as `__thisclass__` (`sys.setprofile(super(Prof, Prof).__thisclass__)`), an attribute round 14 did not count among those that walk the class graph: the profile call constructs `Prof`, whose `__init__` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof:
    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


sys.setprofile(super(Prof, Prof).__thisclass__)


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
