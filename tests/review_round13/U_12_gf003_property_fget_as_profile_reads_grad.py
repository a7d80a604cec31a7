# GF003 safe merge wrong: `Tracker.prof` read on the class is the property object, and its `fget` hands the getter to `sys.setprofile` (round 12 took a property's accessor for code run at the read only): the getter reads `w.grad` between the passes.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Tracker:
    @property
    def prof(self, event=None, arg=None):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else w.grad.sum().item())


sys.setprofile(Tracker.prof.fget)


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
