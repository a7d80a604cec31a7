# GF003 safe merge wrong: `loss_fn` only reads its parameters as operands (`u - v`, `loops._reading_helpers`), but `u - Keeper()` runs the file's `Keeper.__rsub__`, which returns `u`: `v = loss_fn(bufs[0], Keeper())` is `bufs[0]`, `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
bufs = [torch.zeros(3)]


class Keeper:
    def __rsub__(self, other):
        return other


def loss_fn(u, v):
    return u - v


def train():
    h = (w * 2).tanh()
    v = loss_fn(bufs[0], Keeper())
    v.copy_(h)
    for step in range(3):
        l1 = (bufs[0] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
