# GF003 safe merge wrong: `del box` between the passes drops the last reference to `box`: the `weakref.ref` callback `report` reads `w.grad`: the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
import weakref


class Box:
    pass


def report(ref):
    print("callback sees", None if w.grad is None else w.grad.tolist())



def step():
    box = Box()
    r = weakref.ref(box, report)
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    del box
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
