# GF003 safe merge wrong: `@logged` (a decorator of the file) returns its `inner`, which `sys.setprofile(prof)` hands on under the name `prof`: `inner` runs at each call between the passes (`print`) and reads `w.grad`: the first pass's gradient sum before, `None` after the merge.
import functools
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def logged(fn):
    @functools.wraps(fn)
    def inner(frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else w.grad.sum().item())
        return fn(frame, event, arg)

    return inner


@logged
def prof(frame, event, arg):
    return None


sys.setprofile(prof)


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
