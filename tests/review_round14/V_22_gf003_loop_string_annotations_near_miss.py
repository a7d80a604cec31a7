# Near miss (safe and exact): string annotations that name no class maker (`"torch.Tensor"`, `"Optional[int]"`) and a `singledispatch` registry of plain classes keep the safe merge of `buf - x` operands.
import functools
import typing

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


@functools.singledispatch
def kind(x):
    return 0


@kind.register
def _(x: "int"):
    return 1


def scale(t: "torch.Tensor", k: "typing.Optional[int]" = None) -> "torch.Tensor":
    return t * (k or 1)


def train():
    buf = torch.ones(3)
    for step in range(3):
        feats = (w * 2).tanh()
        l1 = (feats * (buf - 0.5)).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
    print(kind(3), scale(torch.ones(1), 2).item())


if __name__ == "__main__":
    train()
    print(w.grad)
