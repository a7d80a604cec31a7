# Near miss (safe and exact): a reading helper whose gathering operators (`u * 2 - v`) go on into a new value (`** 2`, `torch.mean`) only reads the container's item it is given; the safe merge stays.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
bufs = [torch.ones(3)]


def loss_fn(u, v):
    return torch.mean((u * 2 - v) ** 2)


def train():
    print(round(loss_fn(bufs[0], 0.5).item(), 6))
    for step in range(3):
        feats = (w * 2).tanh()
        l1 = (feats * bufs[0]).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
