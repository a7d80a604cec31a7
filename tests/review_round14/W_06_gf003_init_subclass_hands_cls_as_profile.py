# GF003 safe merge wrong: `__init_subclass__` of a base of the file hands each subclass on by its `cls` (`sys.setprofile(cls)`), with no name of the subclass read: the profile call constructs `Prof`, whose `__init__` reads `w.grad` at the `print` between the passes: `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Installed:
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        sys.setprofile(cls)


class Prof(Installed):
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
