# GF003 safe merge wrong: a class of the file reached by its name as a string (`globals()["Prof"]`) and handed to `sys.setprofile`: its `__init__` runs at each call between the passes and reads `w.grad`.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []

class Prof:
    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else w.grad.sum().item())


sys.setprofile(globals()["Prof"])


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
