# GF005: `UserDict.__init__` calls `self.update(initial)`: two `Bank(...)` calls hand `update` one graph twice, which the fix frees after the first.
import torch
from collections import UserDict

torch.manual_seed(0)
v = torch.randn(3, requires_grad=True)


class Bank(UserDict):
    w = torch.ones(3, requires_grad=True)

    def update(self, batch):
        loss = (self.w * batch["h"]).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    h = (v * 2).tanh()
    Bank({"h": h})
    Bank({"h": h})
    print(v.grad, Bank.w.grad)
