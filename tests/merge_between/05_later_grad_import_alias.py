# GF003 safe fix: a later torch.autograd.grad called through an import alias (`agrad`) needs the
# graph of l1 that retain_graph=True kept alive. Original runs; rewrite: the merged backward frees it.
import torch
from torch.autograd import grad as agrad
torch.set_num_threads(1)
torch.manual_seed(0)

w1 = torch.randn(3, requires_grad=True)
w2 = torch.randn(3, requires_grad=True)


def step():
    u = w1 * 3.0
    l1 = u.pow(2).sum()
    l2 = w2.tanh().sum()
    l1.backward(retain_graph=True)
    l2.backward()
    g, = agrad(l1, u)
    return g


g = step()
print(w1.grad.tolist(), w2.grad.tolist(), g.tolist())
