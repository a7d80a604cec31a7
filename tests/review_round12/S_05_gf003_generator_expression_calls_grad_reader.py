# GF003 safe merge wrong: `seen = (look() for _ in range(1))` is a generator expression: its code runs at `list(seen)` between the passes, and `look` reads `w.grad`: the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def look():
    return None if w.grad is None else w.grad.tolist()


seen = (look() for _ in range(1))


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(list(seen))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
