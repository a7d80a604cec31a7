# Near miss (GF003 stays safe and exact): `nn`, `optim` and `F` bound only by imports of torch's modules keep the merge (`nn.Parameter(h)` detaches what it is given).
import torch
import torch.nn.functional as F
from torch import nn, optim

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = nn.Parameter(h)
    opt = optim.SGD([buf], lr=0.1)
    for step in range(3):
        l1 = (F.relu(buf) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
    opt.zero_grad()


if __name__ == "__main__":
    train()
    print(w.grad)
