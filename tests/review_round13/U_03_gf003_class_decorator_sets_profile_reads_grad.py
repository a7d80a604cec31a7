# GF003 safe merge wrong: `@sys.setprofile` on a class hands the class to the profiler, which constructs it at each call between the passes: its `__init__` reads `w.grad`.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


@sys.setprofile
class Prof:
    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else w.grad.sum().item())


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
