# GF003 safe merge wrong: a lambda bound in a class body is a method: `sys.setprofile(Tracker().prof)` hands it on, but round 12 followed a bound lambda by its bare name only: it reads `w.grad` between the passes.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Tracker:
    prof = lambda self, frame, event, arg: seen.append(None if w.grad is None else w.grad.sum().item()) if event == "c_call" and arg is print else None


sys.setprofile(Tracker().prof)


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
