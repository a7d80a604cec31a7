# GF003 safe merge wrong: G['w'] = w.grad stores the gradient tensor; reading G['w'] between the passes sees the first pass in the original, zeros after the merge.
import operator
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
w.grad = torch.zeros(4)
G = {}


def step():
    G["w"] = w.grad
    l1 = (w * 2).tanh().sum()
    l1.backward(retain_graph=True)
    print("between", float(G["w"].sum()))
    l2 = (w * w).sum()
    l2.backward()


step()
print("w.grad", w.grad.tolist())
