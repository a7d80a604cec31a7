# Reach (not a bug): true submodules of proven packages (`torch.nn.modules.activation.ReLU`, `torch.nn.utils.rnn.pad_sequence`, `np.random.random`), typing's container ABCs as `isinstance`'s class, typing's forms anywhere (`TypeVar`, `Optional`, `Dict` in annotations), `nn.Module.__init__`, and operators other than `|` keep operators proven: `buf * 2`, `buf > 0`, `-buf` make new values, and the merge stays safe.
import typing
from typing import Dict, Mapping, Optional, TypeVar

import numpy as np
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
T = TypeVar("T")


def describe(stats: Dict[str, float], names: Optional[typing.List[str]] = None) -> typing.Dict[str, float]:
    return {k: v for k, v in stats.items() if isinstance(names, typing.Sequence) or isinstance(stats, Mapping)}


def train():
    act = torch.nn.modules.activation.ReLU()
    torch.nn.Module.__init__(act)
    noise = np.random.random(3)
    buf = torch.zeros(3)
    print(describe({"a": 1.0}), act(torch.ones(1)).item(), (buf * 2).sum().item(), (buf > 0).sum().item(), (-buf).sum().item(), float(noise.sum()) > -1, torch.nn.utils.rnn.pad_sequence([torch.ones(1)]).shape)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
