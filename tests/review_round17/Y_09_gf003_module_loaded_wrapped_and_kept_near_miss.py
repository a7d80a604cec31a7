# Near miss (safe, exact): modules of the file whose `forward` changes state, kept in the file: a state dict loaded with `torch.load(..., weights_only=True)` into `load_state_dict`, `nn.DataParallel(Net())` called, its `.module` loaded, its parameters handed to the optimizer, a `nn.ModuleDict` submodule read by its key as an attribute and called, `getattr(seq, "0")` called, `model.apply(init)` with a def of the file, a buffer named by a string: no `forward` is handed on.
import io

import torch
from torch import nn

torch.manual_seed(0)
seen = []


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("scale", torch.ones(3))

    def forward(self, x):
        seen.append(1)
        return self.lin(x).tanh() * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({"first": Block()})
        self.seq = nn.Sequential(Block())

    def forward(self, x):
        first = self.blocks.first
        return getattr(self.seq, "0")(first(x))


def init(m):
    if isinstance(m, nn.Linear):
        nn.init.constant_(m.bias, 0.1)


source = Net()
buf = io.BytesIO()
torch.save(source.state_dict(), buf)
buf.seek(0)
model = nn.DataParallel(Net())
model.module.load_state_dict(torch.load(buf, weights_only=True))
model.module.apply(init)
opt = torch.optim.SGD(model.module.parameters(), lr=0.1)
x = torch.ones(2, 3)


def step():
    out = model(x)
    l1 = out.sum()
    l2 = (out * out).sum()
    l1.backward(retain_graph=True)
    print(model.training)
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(seen), [round(p.grad.sum().item(), 5) for p in model.module.parameters()])
