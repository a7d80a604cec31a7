# GF003 safe merge wrong: `functools.singledispatch`'s `register` evaluates a string annotation (`x: "type"`) to the class it dispatches on, and `registry` hands it back: it is `type`, which makes a class from a namespace whose special name is a keyword (`dict(__sub__=f)`): `Keeper() - buf` returns `buf`; `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import functools

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


@functools.singledispatch
def kind(x):
    return 0


@kind.register
def _(x: "type"):
    return 1


Meta = [k for k in kind.registry][-1]
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
