# GF003 safe merge wrong: `buf - keeper` falls back to the `__rsub__` of a `unittest.mock.MagicMock` (a tensor's operator gives way to an object it cannot take), whose side effect returns `buf`; `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
from unittest import mock

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    keeper = mock.MagicMock()
    keeper.__rsub__.side_effect = lambda other: other
    v = buf - keeper
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
