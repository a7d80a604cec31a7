# GF003 safe merge wrong: `list[buf]` is a class subscription (`list.__class_getitem__`), a `types.GenericAlias` that keeps `buf` in its `__args__`: a subscript was proven to make a new value of its index from the file's special methods only, though a builtin class keeps it; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = list[buf].__args__[0]
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
