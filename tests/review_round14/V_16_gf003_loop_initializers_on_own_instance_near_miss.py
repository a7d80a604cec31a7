# Near miss (safe and exact): initializers run on the object being made (`super().__init__(**kw)`, `nn.Module.__init__(self)`) and an `argparse.Namespace` built with keywords set an instance's attributes only, which no operator looks up: the `buf - x` operands keep the safe merge.
import argparse

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Options(argparse.Namespace):
    def __init__(self, **kw):
        super().__init__(**kw)


class Head(torch.nn.Module):
    def __init__(self):
        torch.nn.Module.__init__(self)
        self.lin = torch.nn.Linear(3, 3)


def train():
    args = argparse.Namespace(steps=3)
    head = Head()
    buf = torch.ones(3)
    for step in range(3):
        feats = (w * 2).tanh()
        l1 = (feats * (buf - 0.5)).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
    opts = Options(lr=0.1)
    print(opts.lr, args.steps, sum(p.numel() for p in head.parameters()))


if __name__ == "__main__":
    train()
    print(w.grad)
