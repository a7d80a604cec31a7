# GF003 safe merge wrong: an instance of an `nn.Module` class of the file handed to `weakref.finalize` as the callback (`weakref.finalize(box, Report())`) runs its `forward` when `box` is dropped, here by the rebinding between the passes: `forward` reads `w.grad`: the first pass's gradient sum before, `None` after the merge.
import weakref

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Report(nn.Module):
    def forward(self):
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


class Box:
    pass


box = Box()
weakref.finalize(box, Report())


def step():
    global box
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    box = None
    l2.backward()


if __name__ == "__main__":
    step()
    print(seen)
    print(w.grad.tolist())
