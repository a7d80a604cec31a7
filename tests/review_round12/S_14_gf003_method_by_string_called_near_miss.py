# GF003 near miss: a method reached by its name as a string but called where it stands (getattr(...)(...), vars(K)[...](...)) is handed to nobody: the merge stays safe and exact.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Tracker:
    def prof(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else w.grad.sum().item())


getattr(Tracker(), "prof")(None, "call", None)  # called where it stands: nothing kept
probe = vars(Tracker)["prof"](Tracker(), None, "call", None)


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
