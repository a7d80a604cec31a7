# Near miss (safe and exact): views given as the first argument of a builtin that reads them (`max(d.items(), key=...)`, `sorted(d.keys(), reverse=True)`, `min(d.keys())`, `dict(d.items())`) keep none: `buf - x` and `buf ^ m` keep the safe merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    d = {"a": 2, "b": 1}
    best = max(d.items(), key=lambda kv: kv[1])
    names = sorted(d.keys(), reverse=True)
    first = min(d.keys())
    copy = dict(d.items())
    buf = torch.ones(3)
    mask = torch.ones(3, dtype=torch.bool)
    for step in range(3):
        feats = (w * 2).tanh()
        l1 = (feats * (buf - 0.5) * (mask ^ False)).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
    print(best, names, first, copy)


if __name__ == "__main__":
    train()
    print(w.grad)
