# GF003 safe merge wrong: `copy.copy` of an object whose `__reduce__` returns `(lambda: F.torch, (), {"mean": f})` calls the lambda and updates the result's `__dict__` with the state: torch (reached as an attribute of `torch.nn.functional`, handed on) gets `mean`, a string the file's stores never showed; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import copy

import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Patch:
    def __reduce__(self):
        return ((lambda: F.torch), (), {"mean": lambda t: t})


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = torch.mean(buf)
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    copy.copy(Patch())
    train()
    print(w.grad)
