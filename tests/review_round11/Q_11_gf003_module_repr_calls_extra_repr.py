# GF003 safe merge wrong: `print(net)` between the passes runs torch's `Module.__repr__`, which calls the file's `extra_repr` (no call by name), reading `w.grad`: the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
import torch.nn as nn


class Net(nn.Module):
    def extra_repr(self):
        return str(None if w.grad is None else w.grad.tolist())


net = Net()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(net)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
