# Near miss (safe, exact): a builder method of the file reached by `getattr(self, "build_" + kind)()` and by `getattr(factory, "build")()`, a property read by `getattr(factory, "made")`, a `nn.ModuleList()` the file builds appended to: every module they give is called or kept in the file; no `forward` is handed on.
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


class Factory:
    def build(self):
        return Block()

    def build_wide(self):
        return Block()

    @property
    def made(self):
        return Block()

    def make(self, kind):
        return getattr(self, "build_" + kind)()


factory = Factory()
blocks = nn.ModuleList()
blocks.append(getattr(factory, "build")())
blocks.append(factory.make("wide"))
blocks.append(getattr(factory, "made"))
x = torch.ones(2, 3)


def step():
    out = x
    for block in blocks:
        out = block(out)
    l1 = out.sum()
    l2 = (out * out).sum()
    l1.backward(retain_graph=True)
    print(len(blocks))
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(seen), [round(p.grad.sum().item(), 5) for p in blocks.parameters()])
