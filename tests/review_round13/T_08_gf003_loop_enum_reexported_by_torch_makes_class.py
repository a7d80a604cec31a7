# GF003 safe merge wrong: `torch.amp.grad_scaler.Enum` is `enum.Enum`, re-exported, and passed as a name of a proven torch module; its functional API makes a class from a namespace mapping whose special name is computed (`"__s" + "ub__"`): `Keeper.a - buf` returns `buf`; `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
Keeper = torch.amp.grad_scaler.Enum("Keeper", {"__s" + "ub__": lambda self, other: other, "a": 1})


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = Keeper.a - buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
