# Reach (not a bug): a helper under `@torch.no_grad()`, a running mean updated in place with detached values, a literal stored into torch's settings, an input tensor handed to the model in the loop, a default argument read only: the merge stays safe.
import sys
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
torch.backends.cudnn.benchmark = False
sys.path.append("unused")


@torch.no_grad()
def scale(x, k=(2.0, 3.0)):
    return x * k[0]


def train():
    model = nn.Linear(3, 3)
    x = torch.randn(3)
    running = torch.zeros(3)
    for step in range(3):
        out = model(x) * w
        l1 = (out * scale(w)).sum()
        l2 = (out * out).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        running.mul_(0.9).add_(out.detach())
    print(running)


if __name__ == "__main__":
    train()
    print(w.grad)
