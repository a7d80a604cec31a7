# GF003 safe merge wrong: box.g = w.grad stores the gradient tensor; reading box.g between the passes sees the first pass in the original, zeros after the merge.
import operator
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
w.grad = torch.zeros(4)
import types
box = types.SimpleNamespace()


def step():
    box.g = w.grad
    l1 = (w * 2).tanh().sum()
    l1.backward(retain_graph=True)
    print("between", float(box.g.sum()))
    l2 = (w * w).sum()
    l2.backward()


step()
print("w.grad", w.grad.tolist())
