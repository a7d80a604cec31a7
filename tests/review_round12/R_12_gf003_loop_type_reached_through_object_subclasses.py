# GF003 safe merge wrong: `torch.Tensor.__mro__[-1]` is `object`, whose `__subclasses__()` hold `type`, called with a namespace: the class's `__mul__` returns its operand, bound by a dict key; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


Keeper = [c for c in torch.Tensor.__mro__[-1].__subclasses__() if c.__name__ == "type"][0]("Keeper", (), {"__mul__": lambda self, other: other})


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
    pass
    train()
    print(w.grad)
