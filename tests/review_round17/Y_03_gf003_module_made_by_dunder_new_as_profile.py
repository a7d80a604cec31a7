# GF003 safe merge wrong: an instance of a module class of the file made by `object.__new__(Prof)` and built by `nn.Module.__init__(p)` (no `Prof(...)` call; round 14 took `__new__`'s argument as inert): handed to `sys.setprofile`, its `forward` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
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


p = object.__new__(Prof)
nn.Module.__init__(p)
sys.setprofile(p)


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
