# GF003 safe merge wrong: `globals().values()` iterated reaches every module-level def with no name or key read (round 13 followed namespaces by a literal key only): the loop hands `prof` to `sys.setprofile`, which reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
# string bound to a name then globals()[name]
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def prof(frame, event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


for value in list(globals().values()):
    if getattr(value, "__name__", None) == "prof":
        sys.setprofile(value)


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
