# Near miss (safe, exact): module instances of the file whose `forward` changes state, used only in ways that keep them in the file: called, a submodule called (`self.enc(x)`), in `nn.ModuleList`/`nn.Sequential`, walked by `self.modules()`, built by a builder through `.to("cpu").train()`, copied by `copy.deepcopy` and called, `model.parameters()` handed to an optimizer, `print`/`isinstance`: no `forward` is handed on.
import copy

import torch
from torch import nn

torch.manual_seed(0)
seen = []


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        seen.append(1)
        return self.lin(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = Encoder()
        self.blocks = nn.ModuleList([Encoder() for _ in range(2)])
        self.head = nn.Sequential(Encoder(), nn.Tanh())
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0.1)

    def forward(self, x):
        seen.append(2)
        x = self.enc(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def build():
    return Net().to("cpu").train()


model = build()
ema = copy.deepcopy(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(isinstance(model, nn.Module), len(list(model.parameters())))
x = torch.ones(2, 3)


def step():
    out = model(x)
    ema(x)
    l1 = out.tanh().sum()
    l2 = (out * out).sum()
    l1.backward(retain_graph=True)
    print(model)
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(seen), [p.grad.sum().item() for p in model.parameters()])
