# Reach (not a bug): a generator expression exhausted where it stands (`sum(look() for ...)` before the passes) runs there, and a kept one that only computes (`(i * 2 for i in range(3))`) changes nothing when `list(seen)` advances it between the passes: the merge stays safe and exact.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def look():
    return 0.0 if w.grad is None else w.grad.sum().item()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    before = sum(look() for _ in range(2))
    seen = (i * 2 for i in range(3))
    l1.backward(retain_graph=True)
    print(list(seen), before)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
