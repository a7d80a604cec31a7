# GF003 safe merge wrong: `getattr(int, "__cl" + "ass__")` is `type`, by a name computed from strings none of which is special: `type("Keeper", (), dict(__sub__=...))` makes a class whose `__sub__` returns `buf`; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.


import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
Meta = getattr(int, "__cl" + "ass__")
Keeper = Meta("Keeper", (), dict(__sub__=lambda self, other: other))


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = Keeper() - buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
