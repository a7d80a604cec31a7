# GF003 safe merge wrong: `globals()[name]` with the name a variable (`name = "prof"`) reaches a module-level def by a computed key, which round 13 left to refusals that `handed_functions` never asked: `sys.setprofile(globals()[name])` hands `prof` on, which reads `w.grad` at the `print` between the passes: `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def prof(frame, event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


name = "prof"
sys.setprofile(globals()[name])


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
