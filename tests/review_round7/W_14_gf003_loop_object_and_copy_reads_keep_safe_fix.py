# Reach (not a bug): a module's weight re-initialised in place through a path (`lin.weight.data.normal_()`), its buffer read in the loop, and a tensor bound by `x.float()` whose source `x` is only read (`x.sum()`): the merge stays safe.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    lin = nn.Linear(3, 3)
    lin.weight.data.normal_()
    lin.register_buffer("b", torch.ones(3))
    x = torch.randn(3)
    buf = x.float()
    print(x.sum())
    for step in range(3):
        l1 = ((lin(w) + lin.b) * buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
