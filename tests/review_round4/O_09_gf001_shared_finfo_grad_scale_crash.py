# GF001 safe fix that crashes: the shared argument FI = torch.finfo(torch.float32) counts as a tensor value (torch.finfo is in TENSOR_FUNCTIONS), but grad_scale(FI, 0.0) raises TypeError on a finfo object.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)
W = torch.randn(6, requires_grad=True)
FI = torch.finfo(torch.float32)


def critic(w, a, b):
    return (a * b).sum() + w.eps


def step():
    l1 = critic(FI, x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * critic(FI, x, y.detach())
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
