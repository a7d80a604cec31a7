# GF003 safe merge wrong: `sorted([1, 2], key=lambda v: ... w.grad ...)` between the passes runs the lambda, which tests `w.grad`: [2, 1] before, [1, 2] after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(sorted([1, 2], key=lambda v: -v if w.grad is not None else v))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
