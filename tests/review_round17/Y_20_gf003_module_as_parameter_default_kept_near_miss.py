# Near miss (safe, exact): a module of the file whose `forward` changes state bound to a name read as parameters' defaults (`def run(x, m=model)`, `lambda x, m=model: m(x)`), called in their bodies: no `forward` is handed on.
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


model = Net()


def run(x, m=model):
    return m(x)


again = lambda x, m=model: m(x)  # noqa: E731
x = torch.ones(2, 3)


def step():
    out = run(x) + again(x)
    l1 = out.sum()
    l2 = (out * out).sum()
    l1.backward(retain_graph=True)
    print(len(seen))
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(seen), [round(p.grad.sum().item(), 5) for p in model.parameters()])
