# GF003 safe merge wrong: `torch.narrow(w.grad, 0, 0, 4)` is a view of the gradient tensor (a torch function, not a method); read between the passes.
import operator
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
w.grad = torch.zeros(4)
G = []


def step():
    G.append(torch.narrow(w.grad, 0, 0, 4))
    l1 = (w * 2).tanh().sum()
    l1.backward(retain_graph=True)
    print("between", float(G[0].sum()))
    l2 = (w * w).sum()
    l2.backward()


step()
print("w.grad", w.grad.tolist())
