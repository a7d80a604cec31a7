# Near miss (safe, exact): `Acc.__radd__` calls a method of its class and builtins that keep nothing (`self.scale(other)`, `len`, `float`); `__len__` reads a list. Nothing keeps the loss.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def halve(x):
    return x / 2


class Acc:
    def __init__(self):
        self.items = [1.0, 2.0]

    def __len__(self):
        return len(self.items)

    def scale(self, x):
        return x * len(self.items)

    def __radd__(self, other):
        return float(self.scale(halve(other)).item())


acc = Acc()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    return l1 + acc


def train():
    return step(), len(acc)


if __name__ == "__main__":
    print(train())
    print(w.grad.tolist())
