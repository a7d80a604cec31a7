# GF003 safe merge wrong: a module of the file in an `nn.Sequential` read back by `getattr(seq, "0")` (a literal name was followed only where a store of the file binds it): handed to `sys.setprofile`, its `forward` reads `w.grad` at the `print` between the passes: the first pass's gradient sum before, `None` after the merge.
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


seq = nn.Sequential(Prof())
sys.setprofile(getattr(seq, "0"))


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
