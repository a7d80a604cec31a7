# GF003 safe merge wrong: a module-level def read through a chain of attributes from a trusted module whose attribute the file itself binds (`torch.me = sys.modules[__name__]`, then `sys.setprofile(torch.me.prof)`): round 15 kept such a chain (`_attribute_chain`) off the file's defs, but the file stored its own module there: `prof` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


def prof(frame, event, arg):
    if event == "c_call" and arg is print:
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


torch.me = sys.modules[__name__]
sys.setprofile(torch.me.prof)


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
