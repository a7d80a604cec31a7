# GF003 safe merge wrong: a lambda bound to a module-level name, reached by its name as a string (`globals()["hook"]`) and handed to `sys.setprofile`: it reads `w.grad` between the passes.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


hook = lambda frame, event, arg: seen.append(None if w.grad is None else w.grad.sum().item()) if event == "c_call" and arg is print else None


sys.setprofile(globals()["hook"])


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
