# Reach (not a bug): a class of the file with no operator special method (`__init__`, `__repr__`, and a dataset's `__getitem__` and `__len__`, which no operator runs), torch's functional module imported as `from torch.nn import functional as F`, an item updated in place by a number (`for t in bufs: t += 0.5`), a tensor read as an operand (`buf * 2`) and through a fresh method (`buf.mean()`), an item handed to a loss (`F.mse_loss(bufs[0], y)`): the merge stays safe.
import torch
from torch.nn import functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
y = torch.randn(3)


class Meter:
    def __init__(self):
        self.total = 0.0

    def __repr__(self):
        return f"Meter({self.total:.4f})"

    def __getitem__(self, i):
        return self.total

    def __len__(self):
        return 1


def train():
    meter = Meter()
    bufs = [torch.ones(3), torch.ones(3)]
    for t in bufs:
        t += 0.5
    buf = torch.zeros(3)
    print((buf * 2).sum().item(), buf.mean().item())
    for step in range(3):
        l1 = (F.mse_loss(bufs[0] * w, y) + (buf * w).sum())
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
    meter.total = l1.item()
    print(meter)


if __name__ == "__main__":
    train()
    print(w.grad)
