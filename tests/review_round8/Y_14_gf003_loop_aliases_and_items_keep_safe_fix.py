# Reach (not a bug): modules held by a container module (`model = nn.Sequential(enc, dec)`), one re-initialised by a torch function whose result is thrown away (`nn.init.zeros_(enc.bias)`), a list of buffers scaled in place through a loop target (`for b in bufs: b.mul_(0.5)`), an item read as an operand (`bufs[0] * w`), a tensor given to a torch function without an in-place flag (`F.relu(buf)`), and a history of numbers: the merge stays safe.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    enc = nn.Linear(3, 3)
    dec = nn.Linear(3, 3)
    nn.init.zeros_(enc.bias)
    model = nn.Sequential(enc, dec)
    bufs = [torch.ones(3), torch.ones(3)]
    for b in bufs:
        b.mul_(0.5)
    buf = torch.zeros(3)
    history = []
    for step in range(3):
        out = model(w) + F.relu(buf)
        l1 = (out * bufs[0] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        history.append(l1.item())
    print(history[-1], len(history))


if __name__ == "__main__":
    train()
    print(w.grad)
