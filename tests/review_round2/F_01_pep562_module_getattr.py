import torch
import torch.nn.functional as F
torch.set_num_threads(1)
def f(a, b):
    return ((a - b) ** 2).mean()
torch.manual_seed(1)
x = torch.randn(3, requires_grad=True)
y = torch.randn(3, requires_grad=True)
import sys
_n = [0]
def __getattr__(name):
    if name == 'z':
        _n[0] += 1
        return x * _n[0]
    raise AttributeError(name)
m = sys.modules[__name__]
l1 = f(m.z.detach(), y)
l1.backward(retain_graph=True)
l2 = -1 * f(m.z, y.detach())
l2.backward()
print(x.grad.tolist() if x.grad is not None else None, y.grad.tolist() if y.grad is not None else None)
