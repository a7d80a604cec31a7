# GF003 safe merge wrong: an instance of an `nn.Module` class of the file handed to `sys.setprofile` (`sys.setprofile(Prof())`) is called by torch's `Module.__call__`, which runs `forward` at every profiled call with no call gradfix sees (round 12 handed on every `__call__` of the file, but a module's is torch's): `forward` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
import sys

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof(nn.Module):
    def forward(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


sys.setprofile(Prof())


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
