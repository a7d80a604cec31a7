# near miss: the same instance passed as `self` to an undecorated method of the file through its class (`Base.install(self)`): followed as that method's first parameter, kept there (`self.training`): stays safe and exact
import sys

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Base(nn.Module):
    def install(self):
        return self.training


class Prof(Base):
    def __init__(self):
        super().__init__()
        Base.install(self)

    def forward(self, frame, event, arg):
        if event == "c_call" and arg is print:
            seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))


prof = Prof()


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
