# Near miss (safe, exact): an optimizer and a module of the file with properties that change state under names torch's special methods do not read (`lr`, `width`), printed between the passes: round 15's reads of the bases (`_LIBRARY_SELF_READS`, `_MODULE_SELF_CALLS`) keep the merge safe.
import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
seen = []


class Plain(torch.optim.Optimizer):
    @property
    def lr(self):
        seen.append(1)
        return self.param_groups[0]["lr"]


class Net(nn.Module):
    @property
    def width(self):
        seen.append(1)
        return 3

    def forward(self, x):
        return x + 1


opt = Plain([torch.zeros(1, requires_grad=True)], {"lr": 0.1})
net = Net()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(opt, net)
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(seen), w.grad.tolist())
