import torch
import torch.nn.functional as F
torch.set_num_threads(1)
def f(a, b):
    return ((a - b) ** 2).mean()
torch.manual_seed(1)
w = torch.randn(3, requires_grad=True)
v = torch.randn(3, requires_grad=True)
x = w * 2
y = v * 3
l1 = f(x.detach(), F.selu(y, True))
l1.backward(retain_graph=True)
l2 = -1 * f(x, F.selu(y, True).detach())
l2.backward()
print(w.grad.tolist() if w.grad is not None else None, v.grad.tolist() if v.grad is not None else None)
