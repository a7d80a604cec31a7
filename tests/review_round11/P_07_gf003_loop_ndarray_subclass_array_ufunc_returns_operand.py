# GF003 safe merge wrong: an `np.ndarray` subclass of the file with a higher `__array_priority__` than a tensor's gets `Keeper * buf` first, and its `__array_ufunc__` (not among `_OPERAND_DUNDERS`) returns `buf`; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import numpy as np
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Keeper(np.ndarray):
    __array_priority__ = 2000.0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return inputs[1]


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = np.zeros(1).view(Keeper) * buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
