# GF003 safe merge wrong: a tensor subclass whose base is imported under another name (`from torch import Tensor as Base`) overrides `__add__` to log: none in the original, one for the merged sum `l1 + l2`.
import torch

torch.manual_seed(0)
from torch import Tensor as Base


class Logged(Base):
    def __add__(self, other):
        print("add")
        return torch.Tensor.__add__(self, other)


w = torch.randn(3).as_subclass(Logged).requires_grad_()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


def train():
    step()


if __name__ == "__main__":
    train()
    print([round(v, 4) for v in w.grad.tolist()])
