# GF003 safe merge wrong: `"{0.grad}".format(w)` between the passes reads `w.grad` by the template's field (`str.format` runs `getattr`), no attribute node: the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("{0.grad}".format(w))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
