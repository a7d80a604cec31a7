# GF003 safe merge wrong: a container read as an operand of a gathering operator is followed as what it holds, but a write into an item past that step (`(bufs + [])[0].copy_(h)`) is rooted at no name the in-place updates report: h's graph goes into `bufs[0]`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    bufs = [torch.zeros(3)]
    (bufs + [])[0].copy_(h)
    for step in range(3):
        l1 = (bufs[0] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
