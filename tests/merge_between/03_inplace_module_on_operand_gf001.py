# GF001 safe fix: a module of the file built with inplace=True runs, between the two passes,
# on operand `x` of the pair. Original: the second evaluation sees the changed x and runs.
# Rewrite: the one evaluation (moved above the call) saved x; the in-place call then changes
# it and the backward raises.
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)

act = nn.ReLU(inplace=True)
lin = nn.Linear(3, 3)
inp = torch.randn(4, 3)
y = torch.randn(4, 3, requires_grad=True)


def step():
    x = lin(inp) * 1.0
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    act(x)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()


step()
print("y.grad", y.grad.tolist())
for name, p in lin.named_parameters():
    print(name, p.grad.tolist())
