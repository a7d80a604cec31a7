import functools
import operator
import torch
torch.set_num_threads(1)

w = torch.ones(3, requires_grad=True)


def step():
    l1 = w.exp().sum()
    l1.backward(retain_graph=True)
    l2 = torch.sum(w * 3)
    l2.backward()
    g = getattr(torch.autograd, "backward")
    g(l1)


step()
print("w.grad", [round(v, 5) for v in w.grad.tolist()])
