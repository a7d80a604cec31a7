# GF003 safe merge wrong: a metaclass of the file gets each class it makes (`Installing.__init__(cls, ...)` runs `sys.setprofile(cls)`), with no name of the class read: the profile call constructs `Prof`, whose `__init__` reads `w.grad` at the `print` between the passes: `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Installing(type):
    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        sys.setprofile(cls)


class Prof(metaclass=Installing):
    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))




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
