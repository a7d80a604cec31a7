# GF003 safe merge wrong: a module class of the file whose `forward` is a lambda bound in the class body (`forward = lambda self, frame, event, arg: ...`), taken for a module class with no `forward` of its own, whose methods (defs only) were handed on: none; the instance handed to `sys.setprofile` runs the lambda, which reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def note(event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


class Prof(nn.Module):
    forward = lambda self, frame, event, arg: note(event, arg)  # noqa: E731


sys.setprofile(Prof())


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
