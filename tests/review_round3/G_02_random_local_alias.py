# GF001 safe fix, wrong: the callee calls dropout through a local name (`drop = F.dropout`).
# A call through a local name is not classified (only the name's binding is looked at, and a
# torch attribute read is accepted), so the callee passes as deterministic. The original
# draws two dropout masks, the rewrite one: x.grad changes.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)


def critic(a, b):
    drop = F.dropout
    return (drop(a, 0.5) * b).sum()


def step():
    l1 = critic(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * critic(x, y.detach())
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
