# Reach (not a bug): a file importing only modules whose objects make new values of an operand (torch, numpy, math, random, os, dataclasses) keeps operators, subscripts and fresh torch calls proven: a tensor read as an operand (`buf * scale`), compared (`buf > 0`), through a fresh method (`buf.mean()`) and handed to a loss (`F.mse_loss(bufs[0], y)`): the merge stays safe.
import math
import os
import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
w = torch.randn(3, requires_grad=True)
y = torch.randn(3)


@dataclass
class Config:
    scale: float = math.sqrt(2.0)
    name: str = os.path.basename("run/train")


def train():
    cfg = Config()
    table = np.arange(3.0)
    bufs = [torch.ones(3), torch.ones(3)]
    buf = torch.zeros(3)
    print((buf * cfg.scale).sum().item(), (buf > 0).sum().item(), buf.mean().item(), cfg.name, float(table.sum()))
    for step in range(3):
        l1 = F.mse_loss(bufs[0] * w, y) + (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
