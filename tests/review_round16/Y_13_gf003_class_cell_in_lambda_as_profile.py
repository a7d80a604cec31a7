# GF003 safe merge wrong: the `__class__` cell read in a lambda's body in a method (`sys.setprofile((lambda: __class__)())`): round 15 read the bare `__class__` in a method's body as a class reached by no name (`_class_parameter_reads`), but through `nodes_within`, which leaves lambdas' bodies out: the profile call constructs `Prof`, whose `__init__` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof:
    @staticmethod
    def install():
        sys.setprofile((lambda: __class__)())

    def __init__(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


Prof.install()


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
