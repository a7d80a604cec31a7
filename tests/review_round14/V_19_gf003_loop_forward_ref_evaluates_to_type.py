# GF003 safe merge wrong: `typing.ForwardRef("type")._evaluate(None, None, frozenset())` evaluates its string as code (builtins in reach): it is `type`, which makes a class from a namespace whose special name is a keyword (`dict(__sub__=f)`); `Keeper() - buf` returns `buf`; `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import typing

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
Meta = typing.ForwardRef("type")._evaluate(None, None, frozenset())
Keeper = Meta("Keeper", (), dict(__sub__=lambda self, other: other))


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = Keeper() - buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
