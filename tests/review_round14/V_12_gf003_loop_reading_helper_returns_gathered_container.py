# GF003 safe merge wrong: a loss helper whose parameter is read only as an operand (`return u * k`) was taken to return a new value of what it is given, but given a container (`keep(bufs, 1)`) `*` makes a list of the same tensors: `out[0].copy_(h)` writes h's graph into `bufs[0]`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
bufs = [torch.zeros(3)]


def keep(u, k):
    return u * k


def train():
    h = (w * 2).tanh()
    out = keep(bufs, 1)
    out[0].copy_(h)
    for step in range(3):
        l1 = (bufs[0] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
