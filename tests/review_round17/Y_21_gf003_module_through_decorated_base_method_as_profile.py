# GF003 safe merge wrong: an instance passed as `self` to a decorated method of the file through its class (`Base.install(self)` in a subclass's `__init__`) was followed as that method's first parameter only, but the call runs the decorator's wrapper, which hands `args[0]` to `sys.setprofile`: its `forward` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def traced(f):
    def inner(*args):
        sys.setprofile(args[0])
        return f(*args)

    return inner


class Base(nn.Module):
    @traced
    def install(self):
        return self.training


class Prof(Base):
    def __init__(self):
        super().__init__()
        Base.install(self)

    def forward(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


prof = Prof()


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
