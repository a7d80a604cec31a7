# GF003 safe merge wrong: an instance of a module class of the file handed to a decorated function of the file (`@traced def install(m)`, `install(Prof())`) was followed as the def's parameter only (kept: `m.training`), but the call runs the decorator's wrapper, which hands `args[0]` to `sys.setprofile`: its `forward` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof(nn.Module):
    def forward(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


def traced(f):
    def inner(*args):
        sys.setprofile(args[0])
        return f(*args)

    return inner


@traced
def install(m):
    return m.training


install(Prof())


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
