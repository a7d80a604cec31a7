# GF003 safe merge wrong: as T_04, `getattr(int, "__cl" "ass__")`: two adjacent strings, neither of them special, make the name `__class__`.


import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
Meta = getattr(int, "__cl" "ass__")
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
