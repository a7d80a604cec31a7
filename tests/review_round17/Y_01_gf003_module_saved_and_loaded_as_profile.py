# GF003 safe merge wrong: an instance of an `nn.Module` class of the file saved (`torch.save(Prof(), buf)`, taken as harmless) and rebuilt by the unpickler (`torch.load(buf, weights_only=False)`), which shows no `Prof(...)` call: the loaded instance handed to `sys.setprofile` runs `forward` at the `print` between the passes, reading `w.grad`: the first pass's gradient sum before, `None` after the merge.
import sys
import io

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Prof(nn.Module):
    def forward(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


buf = io.BytesIO()
torch.save(Prof(), buf)
buf.seek(0)
sys.setprofile(torch.load(buf, weights_only=False))


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
