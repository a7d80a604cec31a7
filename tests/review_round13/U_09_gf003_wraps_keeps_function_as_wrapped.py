# GF003 safe merge wrong: `@functools.wraps(prof)` on `quiet` keeps `prof` as `quiet.__wrapped__`, here handed to `sys.setprofile` (round 12 took `wraps` for a callee that keeps nothing): `prof` reads `w.grad` between the passes.
import functools
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def prof(frame, event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else w.grad.sum().item())


@functools.wraps(prof)
def quiet(frame, event, arg):
    return None


sys.setprofile(quiet.__wrapped__)


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
