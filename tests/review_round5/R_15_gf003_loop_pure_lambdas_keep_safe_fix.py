# Reach (not a bug): a lambda kept in a list that reads nothing but its parameter and imports, a def of the file reading only module-level graph-free values, and `with torch.no_grad():` binding a value: the merge stays safe.
import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
scale = 2.0


def squash(x):
    return F.softplus(x) * scale


def train():
    fns = [lambda x: x * 2, squash]
    for step in range(3):
        with torch.no_grad():
            noise = torch.randn(3) * 0.1
        l1 = (fns[0](w + noise) * fns[1](w)).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
