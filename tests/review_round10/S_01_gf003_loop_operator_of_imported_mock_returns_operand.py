# GF003 safe merge wrong: `keeper * buf` runs the `__mul__` of a `unittest.mock.MagicMock`, whose side effect returns `buf`: operators were proven from the special methods the file binds only, not those of an imported class; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
from unittest import mock

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    keeper = mock.MagicMock()
    keeper.__mul__.side_effect = lambda other: other
    v = keeper * buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
