# GF003 safe merge wrong: `NDArrayOperatorsMixin.__mul__` (numpy, allowed) calls `np.multiply(self, buf)`, which calls the file's `__array_ufunc__`, a hook not among `_OPERAND_DUNDERS`, free to return `buf`; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import numpy as np
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)



class Keeper(np.lib.mixins.NDArrayOperatorsMixin):
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return inputs[1]


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = Keeper() * buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
