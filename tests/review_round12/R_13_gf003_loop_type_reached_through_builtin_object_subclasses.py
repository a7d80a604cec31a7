# GF003 safe merge wrong: `object.__subclasses__()` (a builtin, no import) holds `type`, called with a namespace: the class's `__mul__` returns its operand, bound by a dict key, and no name `_classes_made_unseen` looked for appears; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


Keeper = [c for c in object.__subclasses__() if c.__name__ == "type"][0]("Keeper", (), {"__mul__": lambda self, other: other})


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
