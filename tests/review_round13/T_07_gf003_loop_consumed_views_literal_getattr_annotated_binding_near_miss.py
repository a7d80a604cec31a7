# Near miss (safe and exact): a mapping's views only iterated, tested with `in` or read by a builtin, `getattr` given a literal name, and an annotated binding with a value in each iteration keep the safe merge of `buf - f` and `buf ^ m` operands.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
stats = {"a": 1.0, "b": 2.0}


def train():
    buf = torch.ones(3)
    mask = torch.tensor([True, False, True])
    total = sum(v for k, v in stats.items()) + len(stats.keys())
    names = sorted(stats.keys())
    get = getattr(stats, "get")
    if "a" in stats.keys():
        total = total + get("a")
    for step in range(3):
        feats: torch.Tensor = (w * 2).tanh()
        v = buf - feats.detach()
        m = (mask ^ (buf > 0)).float()
        l1 = (feats * v * (m + 1)).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
    print(names, total)


if __name__ == "__main__":
    train()
    print(w.grad)
