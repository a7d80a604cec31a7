# Near miss (safe and exact): a package's own classes and functions reached through its modules (`torch.nn.modules.linear.Linear`, `torch.optim.lr_scheduler.StepLR`, `torch.nn.modules.module.Module`, `numpy.random.default_rng`) keep the safe merge of `buf - x` operands.
import numpy as np
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Head(torch.nn.modules.module.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.modules.linear.Linear(3, 3)


def train():
    head = Head()
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
    rng = np.random.default_rng(0)
    buf = torch.ones(3)
    for step in range(3):
        feats = (w * 2).tanh()
        l1 = (feats * (buf - 0.5)).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
    print(sched.get_last_lr(), rng.integers(1, 2))


if __name__ == "__main__":
    train()
    print(w.grad)
