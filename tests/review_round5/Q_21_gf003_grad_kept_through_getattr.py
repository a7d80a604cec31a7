# GF003 safe merge wrong: `G.append(getattr(w, 'grad'))` keeps the gradient tensor named by a string; read between the passes.
import operator
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
w.grad = torch.zeros(4)
G = []


def step():
    G.append(getattr(w, 'grad'))
    l1 = (w * 2).tanh().sum()
    l1.backward(retain_graph=True)
    print("between", float(G[0].sum()))
    l2 = (w * w).sum()
    l2.backward()


step()
print("w.grad", w.grad.tolist())
