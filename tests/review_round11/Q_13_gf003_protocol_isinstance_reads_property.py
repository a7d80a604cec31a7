# GF003 safe merge wrong: `isinstance(m, HasNorm)` between the passes (a `runtime_checkable` Protocol) runs `hasattr(m, "gnorm")`, the property of the file, which reads `w.grad`: the first pass's gradient before, `None` after the merge (Python 3.11).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
from typing import Protocol, runtime_checkable


@runtime_checkable
class HasNorm(Protocol):
    gnorm: float


class M:
    @property
    def gnorm(self):
        print("getter sees", None if w.grad is None else w.grad.tolist())
        return 0.0


m = M()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(isinstance(m, HasNorm))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
