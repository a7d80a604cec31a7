# GF003: a method reached by its name as a string (getattr(obj, "prof")) and handed to sys.setprofile: the merged program's profile function sees no first-pass gradient.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Tracker:
    def prof(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else w.grad.sum().item())


sys.setprofile(getattr(Tracker(), "prof"))


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
