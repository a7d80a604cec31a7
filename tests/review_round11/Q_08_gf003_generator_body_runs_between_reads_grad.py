# GF003 safe merge wrong: `seen = watch()` before the passes makes a generator whose body runs at `list(seen)` between the passes, and reads `w.grad`: the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def watch():
    yield None if w.grad is None else w.grad.tolist()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    seen = watch()
    l1.backward(retain_graph=True)
    print(list(seen))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())

