# GF003 safe merge wrong: `hook = prof` then `sys.setprofile(hook)`: the profile function is handed on under another name, and runs at each call between the passes (`print`), reading `w.grad`: the first pass's gradient sum before, `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def prof(frame, event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else w.grad.sum().item())


hook = prof
sys.setprofile(hook)


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
