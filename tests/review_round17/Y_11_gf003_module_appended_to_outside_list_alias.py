# GF003 safe merge wrong: an instance of an `nn.Module` class of the file appended to a list bound by another name (`callbacks = gc.callbacks; callbacks.append(Watch())`), taken as a list the file builds: the collector calls it at each collection, and the allocations between the passes run one, whose `forward` reads `w.grad`: the first pass's gradient sum before, `None` after the merge.
import gc

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Watch(nn.Module):
    def forward(self, phase, info):
        if phase == "start":
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


callbacks = gc.callbacks
callbacks.append(Watch())


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    junk = [[] for _ in range(3000)]
    l2.backward()


if __name__ == "__main__":
    step()
    gc.callbacks.clear()
    print(seen)
    print(w.grad.tolist())
