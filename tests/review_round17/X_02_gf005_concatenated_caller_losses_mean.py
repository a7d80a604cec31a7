# GF005: `torch.cat([...]).mean()` of the caller's losses, scaled by an attribute, was the function's own loss.
import torch
from collections import UserDict

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class LossBank(UserDict):
    scale = 2.0

    def update(self, losses):
        parts = [loss.reshape(1) for loss in losses.values()]
        total = torch.cat(parts).mean() * self.scale
        total.backward(retain_graph=True)


if __name__ == "__main__":
    h = (w * 2).tanh()
    d = (h * h).sum()
    bank = LossBank({"d": d})
    g = (h * 3).sum()
    g.backward()
    print(w.grad)
