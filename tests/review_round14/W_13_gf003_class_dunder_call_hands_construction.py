# GF003 safe merge wrong: `Prof.__call__` read on a class is `type.__call__` bound to it, which constructs `Prof` (round 13 handed on the `__call__` defs of the file only): `sys.setprofile(Prof.__call__)` runs `Prof.__init__`, which reads `w.grad` at the `print` between the passes: `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof:
    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


sys.setprofile(Prof.__call__)


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
