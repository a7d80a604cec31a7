# Near miss (safe, exact): a class whose `__init__` changes state, with a classmethod's `__self__`, the `__class__` cell and a `super` object's `__thisclass__` read only for their names (attribute receivers, inert): round 15's class-graph attributes keep the merge safe.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof:
    @classmethod
    def make(cls):
        return 1

    @staticmethod
    def name():
        return __class__.__name__

    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


print(Prof.make.__self__.__name__, Prof.name(), super(Prof, Prof).__thisclass__.__name__)


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
