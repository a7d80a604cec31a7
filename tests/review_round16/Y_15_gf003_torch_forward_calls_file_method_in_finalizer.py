# GF003 safe merge wrong: a module class of the file with no `forward` of its own (`class Scaled(nn.Conv1d)` overriding `_conv_forward`), an instance handed to `weakref.finalize(box, Scaled(1, 1, 1), x)`: torch's `Conv1d.forward` calls the file's `_conv_forward` when `box` is dropped between the passes, which reads `w.grad`: the first pass's gradient sum before, `None` after the merge.
import weakref

import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Scaled(nn.Conv1d):
    def _conv_forward(self, input, weight, bias):
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))
        return F.conv1d(input, weight, bias)


class Box:
    pass


box = Box()
weakref.finalize(box, Scaled(1, 1, 1), torch.ones(1, 1, 3))


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
