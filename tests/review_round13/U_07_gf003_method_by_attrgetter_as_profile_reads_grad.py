# GF003 safe merge wrong: `operator.attrgetter("prof")(Tracker())` reaches a method by its name as a string (round 12 knew `getattr` and `vars`/`__dict__` only) and hands it to `sys.setprofile`: it reads `w.grad` between the passes.
import sys
import operator

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []

class Tracker:
    def prof(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else w.grad.sum().item())


sys.setprofile(operator.attrgetter("prof")(Tracker()))


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
