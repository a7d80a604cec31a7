# GF003 safe merge wrong: a builder of the file returns a module instance of the file in an `nn.Sequential` (`return nn.Sequential(Keep())`), handed to `log.addFilter(make())`: logging calls a filter without a `filter` method, so the `warning` between the passes runs `Keep.forward`, which reads `w.grad`: the first pass's gradient sum before, `None` after the merge.
import logging

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Keep(nn.Module):
    def forward(self, record):
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))
        return False


def make():
    return nn.Sequential(Keep())


log = logging.getLogger("r16")
log.addFilter(make())


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    log.warning("between")
    l2.backward()


if __name__ == "__main__":
    step()
    print(seen)
    print(w.grad.tolist())
