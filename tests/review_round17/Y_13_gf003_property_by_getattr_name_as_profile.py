# GF003 safe merge wrong: a property of the file returning a module instance read by `getattr(Factory(), "made")` (its value was followed only at reads of `.made`): handed to `sys.setprofile`, its `forward` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
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
    @property
    def made(self):
        return Prof()


sys.setprofile(getattr(Factory(), "made"))


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
