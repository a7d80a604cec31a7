# GF003 safe merge wrong: `torch.nn.modules.activation.F` is `torch.nn.functional` under a name no list held as a module's: handed on by a `__reduce__` callable, `copy.copy` updates its `__dict__` with the state, `mse_loss = lambda a, b: a`; `F.mse_loss(buf, buf)` returns `buf`; `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import copy
import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Patch:
    def __reduce__(self):
        return ((lambda: torch.nn.modules.activation.F), (), {"mse_loss": lambda a, b: a})


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = F.mse_loss(buf, buf)
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
