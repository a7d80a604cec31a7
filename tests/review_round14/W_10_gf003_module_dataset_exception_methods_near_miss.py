# Near miss (safe, exact): classes based on `nn.Module`, a torch `Dataset`, an exception and a class of the file, whose methods change state but are no method those bases call by name (`forward` run by a call; `bump`, `load`, `note`), with `print`, `len` and `str` between the passes: nothing of the file runs there.
import torch
from torch import nn
from torch.utils.data import Dataset

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def bump(self):
        self.calls += 1

    def forward(self, x):
        return x * 2


class Points(Dataset):
    def __init__(self):
        self.items = []

    def load(self):
        self.items.append(1.0)

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return float(i)


class Halt(RuntimeError):
    def note(self, text):
        self.text = text


class Scaled(Scale):
    def reset(self):
        self.calls = 0


def step(scale, points, halt):
    l1 = scale(w).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(len(points), str(halt), scale)
    l2.backward()


if __name__ == "__main__":
    scale, points, halt = Scaled(), Points(), Halt("stop")
    scale.bump()
    scale.reset()
    points.load()
    halt.note("x")
    step(scale, points, halt)
    print(w.grad.tolist())
