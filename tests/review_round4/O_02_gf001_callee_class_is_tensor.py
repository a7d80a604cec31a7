# GF001 safe fix, wrong: the callee branches on b.__class__ is torch.Tensor (a Parameter vs its .detach()): x.grad changes after the rewrite.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.nn.Parameter(torch.randn(6))

def critic(a, b):
    if b.__class__ is torch.Tensor:
        b = 0.9 * b
    return (a * b).sum()


def step():
    l1 = critic(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * critic(x, y.detach())
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
