# GF003 safe merge wrong: `buf = x; v = x; v.copy_(h)`: `buf` is `x`, written through a third name; `buf`'s value, a name, was proven from `x`'s bindings only (no check that `x` is handed on); the merged backward frees h's graph and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    x = torch.zeros(3)
    buf = x
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
