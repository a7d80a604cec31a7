# Near miss (safe, exact): `f"{sched}"` between the passes runs a special method that reads a `@property` whose getter only computes (`self._lr * 2`), by attribute and by a literal name (`getattr(self, "lr")`): no state changes, no gradient is read.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Schedule:
    def __init__(self, lr):
        self._lr = lr

    @property
    def lr(self):
        return self._lr * 2

    def __format__(self, spec):
        return format(self.lr + getattr(self, "lr"), ".3f")


sched = Schedule(0.25)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(f"lr {sched}")
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
