# GF003 safe merge wrong: `max(prof, quiet, key=...)` was taken for a callee that runs what it is handed and keeps nothing, but `min`/`max` return one of their positional arguments: `sys.setprofile(max(prof, ...))` hands `prof` on, which reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def prof(frame, event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


def quiet(frame, event, arg):
    return None


sys.setprofile(max(prof, quiet, key=lambda f: f.__name__ == "prof"))


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
