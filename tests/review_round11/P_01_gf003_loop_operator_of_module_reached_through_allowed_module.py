# GF003 safe merge wrong: `typing.collections` is the `collections` module, an attribute of the allowed `typing`: `UserList() + buf` holds `list(buf)`, views of its rows, though the file imports no module outside `_OPERAND_MODULES`; the view's `_base` is `buf`, `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import typing
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = (typing.collections.UserList() + buf)[0]._base
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
