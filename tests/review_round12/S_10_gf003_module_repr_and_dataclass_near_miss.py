# Reach (not a bug): a Module's `_get_name` and a dataclass's property field that change nothing and read no gradient: `print(net)`, `print(s)` between the passes see the same in one merged pass, and the merge stays safe and exact.
import dataclasses

import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Net(nn.Module):
    def _get_name(self):
        return "Renamed"


@dataclasses.dataclass
class Stat:
    name: str

    @property
    def name(self):
        return "fixed"

    @name.setter
    def name(self, v):
        pass


net = Net()
s = Stat("x")


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(net, s)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
