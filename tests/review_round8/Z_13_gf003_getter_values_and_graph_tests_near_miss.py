# Near miss (safe, exact): config values read by a computed name only shown or compared (`print(getattr(cfg, key))`, `getattr(cfg, key) == 2`), a module's `eval()` (not the builtin), and a loss's `grad_fn` only tested and named after the merge: no method by a computed name, no saved tensor read.
import argparse

import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
cfg = argparse.Namespace(lr=0.5, steps=2)
head = nn.Linear(3, 1)
head.eval()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    if l1.grad_fn is not None:
        print(type(l1.grad_fn).__name__)


def train():
    for key in ("lr", "steps"):
        print(key, getattr(cfg, key), getattr(cfg, key) == 2)
    step()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
