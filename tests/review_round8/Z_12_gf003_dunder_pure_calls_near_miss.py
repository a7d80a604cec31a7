# Near miss (safe, exact): special methods run between the passes call only builtins, pure torch and math functions and read-only methods on values of their own (`format(self.lr, ".3f")`, `torch.tanh`, `math.sqrt`, `getattr(self, "lr")`): they change no state and read no gradient.
import math

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Schedule:
    def __init__(self, lr):
        self.lr = lr

    def __format__(self, spec):
        return format(getattr(self, "lr") * math.sqrt(4.0), ".3f")

    def __rmul__(self, other):
        return torch.tanh(torch.tensor(self.lr)).item() * other


sched = Schedule(0.5)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(f"lr {sched}", round(2.0 * sched, 4))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
