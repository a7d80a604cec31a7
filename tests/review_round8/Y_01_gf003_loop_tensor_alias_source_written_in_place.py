# GF003 safe merge wrong: `buf = x` then `x.copy_(h)`: `buf` is `x`, which holds h's graph; `buf`'s value, a name, was proven graph-free from `x`'s bindings alone (in-place updates of `x` were not among them); the merged backward frees h's graph and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    x = torch.zeros(3)
    buf = x
    x.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
