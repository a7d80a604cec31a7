# Reach (not a bug): paths of allowed modules through public names that are no module outside the allowlist (`os.path.join`, `typing.Optional`, `torch.nn.functional`, `torch.nn.init`, `np.random`), and `type(x)` only compared or printed, keep operators proven: `buf * cfg.scale`, `buf > 0`, `buf.mean()` make new values, and the merge stays safe.
import os
import typing
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
import torch.nn.init as init

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
y = torch.randn(3)


@dataclass
class Config:
    scale: float = 2.0
    name: typing.Optional[str] = os.path.join("run", "train")


def train():
    cfg = Config()
    init.normal_(torch.empty(2))
    noise = np.random.default_rng(0).normal(size=3)
    buf = torch.zeros(3)
    print(type(cfg) == Config, type(cfg).__name__, isinstance(Config, type), (buf * cfg.scale).sum().item(), (buf > 0).sum().item(), buf.mean().item(), float(noise.sum()) > -100)
    for step in range(3):
        l1 = F.mse_loss(torch.sin(w), y) + (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
