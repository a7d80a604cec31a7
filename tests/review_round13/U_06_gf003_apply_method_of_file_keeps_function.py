# GF003 safe merge wrong: `.apply(f)` was taken for torch's `Module.apply` (runs `f` now) on any receiver: here a class of the file whose `apply` hands `f` to `sys.setprofile`, and `prof` reads `w.grad` between the passes.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []

def prof(frame, event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else w.grad.sum().item())


class Hooks:
    def apply(self, fn):
        sys.setprofile(fn)


Hooks().apply(prof)


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
