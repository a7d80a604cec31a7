# GF003 safe merge wrong: `keeper < buf` calls the `__lt__` of a `unittest.mock.MagicMock`, which records its argument: `keeper.__lt__.call_args.args[0]` is `buf` itself; `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
from unittest import mock

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    keeper = mock.MagicMock()
    keeper.__lt__.return_value = True
    keeper < buf
    v = keeper.__lt__.call_args.args[0]
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
