# GF003 safe merge wrong: torch's `Module.__repr__` calls `_get_name` of the file (`print(net)` between the passes), which reads `w.grad`: the first pass's gradient before, `None` after the merge.
import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Net(nn.Module):
    def _get_name(self):
        return f"Net{None if w.grad is None else w.grad.tolist()}"


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
