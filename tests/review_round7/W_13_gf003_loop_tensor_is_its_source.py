# GF003 safe merge wrong: `buf = x.float()` is `x` itself (already float), and `v = x; v.copy_(h)` writes h's graph into it (only `buf` was checked for being handed on); the merged backward frees h's graph (built before the loop) and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    x = torch.zeros(3)
    buf = x.float()
    v = x
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
