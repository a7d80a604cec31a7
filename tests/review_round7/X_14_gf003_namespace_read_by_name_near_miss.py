# Near miss (safe, exact): namespaces read only by keys gradfix sees or displayed (`vars(cfg).get("lr")`, `sorted(vars(cfg))`, `print(len(torch.Tensor.__dict__))`, `self.__dict__.update(...)`): no method is called by a computed name.
import argparse

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
cfg = argparse.Namespace(lr=0.5, steps=1)


class Box:
    def __init__(self, **kw):
        self.__dict__.update(kw)


box = Box(scale=2.0)


def step():
    l1 = (w * box.scale).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


def train():
    print(sorted(vars(cfg)), vars(cfg).get("lr"), len(torch.Tensor.__dict__) > 0)
    step()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
