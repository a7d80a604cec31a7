# Near miss (safe, exact): a module class of the file with no `forward` of its own (`class Scaled(nn.Conv1d)` overriding `_conv_forward`, which changes state), its instance kept in the file: a submodule of a module of the file called before the passes, its parameters handed to an optimizer: no method of it is handed on.
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
seen = []


class Scaled(nn.Conv1d):
    def _conv_forward(self, input, weight, bias):
        seen.append(1)
        return F.conv1d(input, weight, bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = Scaled(1, 1, 1)

    def forward(self, x):
        return self.conv(x).tanh()


net = Net()
opt = torch.optim.SGD(net.conv.parameters(), lr=0.1)
x = torch.ones(1, 1, 3)


def step():
    out = net(x)
    l1 = out.sum()
    l2 = (out * out).sum()
    l1.backward(retain_graph=True)
    print(len(seen))
    l2.backward()


if __name__ == "__main__":
    step()
    print([round(p.grad.sum().item(), 5) for p in net.parameters()])
