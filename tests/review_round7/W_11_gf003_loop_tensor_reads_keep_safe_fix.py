# Reach (not a bug): a tensor from before the loop read only through views that end in new values (`buf[0] * w`, `buf.view(-1).sum()`), handed to a torch module whose output is an operand (`lin(buf) * w`), printed, its shape read, and updated in place with detached values (`buf.mul_(0.9).add_(out.detach())`): the merge stays safe.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    lin = nn.Linear(3, 3)
    buf = torch.zeros(3)
    buf.add_(1.0)
    print(buf.shape, buf)
    for step in range(3):
        out = (lin(buf) * w).tanh()
        l1 = (out * buf[0] * w).sum() + buf.view(-1).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        buf.mul_(0.9).add_(out.detach())
    print(buf)


if __name__ == "__main__":
    train()
    print(w.grad)
