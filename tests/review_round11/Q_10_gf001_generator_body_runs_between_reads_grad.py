# GF001 safe merge wrong: `seen = watch()` before the passes makes a generator whose body runs at `list(seen)` between the two passes and reads `v.grad`: the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
v = torch.randn(3, requires_grad=True)


def f(a, b):
    return ((a - b) ** 2).mean()


def watch():
    yield None if v.grad is None else v.grad.tolist()


def step():
    x = w * 2
    y = v * 3
    seen = watch()
    l1 = f(x.detach(), y)
    l1.backward(retain_graph=True)
    print(list(seen))
    l2 = -1 * f(x, y.detach())
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist(), v.grad.tolist())
