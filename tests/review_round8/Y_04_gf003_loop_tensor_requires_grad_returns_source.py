# GF003 safe merge wrong: `buf = x.requires_grad_(False)` is `x` itself (an in-place method returns its receiver), and `x.copy_(h)` writes h's graph into it; the merged backward frees h's graph and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    x = torch.zeros(3)
    buf = x.requires_grad_(False)
    x.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
