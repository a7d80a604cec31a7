# GF005: `torch.stack(...).sum()` of the losses handed in was the function's own loss; the fix frees the caller's graph.
import torch
from collections import UserDict

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class LossBank(UserDict):
    """`UserDict.__init__` calls `self.update(initial)`: the losses handed to the class reach it."""

    def update(self, losses):
        torch.stack(list(losses.values())).sum().backward(retain_graph=True)


if __name__ == "__main__":
    h = (w * 2).tanh()
    d = (h * h).sum()
    bank = LossBank({"d": d})
    g = (h * 3).sum()
    g.backward()
    print(w.grad)
