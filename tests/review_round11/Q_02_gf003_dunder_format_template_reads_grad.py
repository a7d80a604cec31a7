# GF003 safe merge wrong: `print(m)` runs `__str__`, whose `"{0.grad}".format(w)` reads `w.grad` by the template's field (no attribute node): the first pass's gradient before, `None` after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
class M:
    def __str__(self):
        return "{0.grad}".format(w)


m = M()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(m)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
