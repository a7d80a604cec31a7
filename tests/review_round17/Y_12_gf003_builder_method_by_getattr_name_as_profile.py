# GF003 safe merge wrong: a method of the file returning a module instance (`def build(self): return Prof()`) called through `getattr(Factory(), "build")()`: its returns were followed only at calls of its name, not of a lookup by a string: the instance handed to `sys.setprofile` runs `forward`, which reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
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


class Factory:
    def build(self):
        return Prof()


sys.setprofile(getattr(Factory(), "build")())


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
