# GF001 safe fix, wrong: the callee branches on f"{b!r}" (repr shows requires_grad=True for y, nothing for y.detach()); repr(b)/str(b) are flagged unsafe, the f-string is not: x.grad changes.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)

def critic(a, b):
    if 'grad' in f"{b!r}":
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
