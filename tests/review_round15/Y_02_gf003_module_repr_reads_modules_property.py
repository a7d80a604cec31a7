# GF003 safe merge wrong: `print(net)` between the passes runs torch's `Module.__repr__`, which reads `self._modules`, a property of the file whose getter reads `w.grad`: round 12 listed the methods `Module` calls on `self` (`_MODULE_SELF_CALLS`), not the attributes its special methods read, which a property overrides: the first pass's gradient sum before, `None` after the merge.
import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Net(nn.Module):
    @property
    def _modules(self):
        seen.append(None if w.grad is None else round(w.grad.sum().item(), 4))
        return self.__dict__["_mods"]

    @_modules.setter
    def _modules(self, value):
        self.__dict__["_mods"] = value

    def forward(self, x):
        return x + 1


net = Net()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(net)
    l2.backward()


if __name__ == "__main__":
    seen.clear()
    step()
    print(seen)
    print(w.grad.tolist())
