# GF003 safe merge wrong: a module-level def reached as an attribute of the file's own module object (`sys.setprofile(sys.modules[__name__].prof)`): round 12 read an attribute of a path from a trusted module (`sys`) as no def of the file, but an item or a call's result on the way may be any module, this one too: `prof` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def prof(frame, event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


sys.setprofile(sys.modules[__name__].prof)


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
