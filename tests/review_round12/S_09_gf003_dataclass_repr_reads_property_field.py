# GF003 safe merge wrong: `@dataclasses.dataclass` generates a `__repr__` that reads each field; the field `name` is a property reading `w.grad`, run by `print(s)` between the passes: the first pass's gradient before, `None` after the merge.
import dataclasses

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


@dataclasses.dataclass
class Stat:
    name: str

    @property
    def name(self):
        return str(None if w.grad is None else w.grad.tolist())

    @name.setter
    def name(self, v):
        pass


s = Stat("x")


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(s)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
