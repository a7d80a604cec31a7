# GF003 safe merge wrong: a classmethod bound to its class gives the class as `__self__` (`sys.setprofile(Prof.make.__self__)`), an attribute round 14 did not count among those that walk the class graph (`_CLASS_GRAPH_ATTRIBUTES`): the profile call constructs `Prof`, whose `__init__` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof:
    @classmethod
    def make(cls):
        return 1

    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


sys.setprofile(Prof.make.__self__)


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
