# Near miss (safe, exact): a module of the file whose `forward` changes state handed to functions of the file decorated by `@torch.no_grad()` and `@torch.enable_grad()` (wrappers that pass the arguments on and keep none), which call it: no `forward` is handed on.
import torch
from torch import nn

torch.manual_seed(0)
seen = []


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        seen.append(1)
        return self.lin(x).tanh()


@torch.no_grad()
def evaluate(m, x):
    return m(x).sum().item()


@torch.enable_grad()
def run(m, x):
    return m(x)


model = Net()
x = torch.ones(2, 3)
before = evaluate(model, x)


def step():
    out = run(model, x)
    l1 = out.sum()
    l2 = (out * out).sum()
    l1.backward(retain_graph=True)
    print(round(before, 5))
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(seen), [round(p.grad.sum().item(), 5) for p in model.parameters()])
