# Near miss (safe, exact): a module wrapped by `nn.DataParallel` and handed to a function of the file that calls it (`run(model, x)`), submodules stored by `add_module("first", Block())` and read by `getattr(self, "first")`, a list of blocks unpacked into `nn.Sequential(*layers)`: no `forward` is handed on.
import torch
from torch import nn

torch.manual_seed(0)
seen = []


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        seen.append(1)
        return self.lin(x).tanh()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module("first", Block())
        layers = []
        for _ in range(2):
            layers.append(Block())
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(getattr(self, "first")(x))


def run(m, x):
    return m(x)


model = nn.DataParallel(Net())
x = torch.ones(2, 3)


def step():
    out = run(model, x)
    l1 = out.sum()
    l2 = (out * out).sum()
    l1.backward(retain_graph=True)
    print(model.training)
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(seen), [round(p.grad.sum().item(), 5) for p in model.parameters()])
