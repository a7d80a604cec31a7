# GF003 safe fix: the last backward's loss is written inline and modifies in place (F.relu(..., inplace=True))
# a tensor the first loss's retained graph saved. Original: l1's backward already ran. Rewrite:
# (l1 + F.relu(h, inplace=True).mean()).backward() walks l1's graph after the change: RuntimeError.
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)

lin = nn.Linear(3, 3)
x = torch.randn(4, 3)


def step():
    h = lin(x)
    l1 = h.pow(2).mean()
    l1.backward(retain_graph=True)
    F.relu(h, inplace=True).mean().backward()


step()
for name, p in lin.named_parameters():
    print(name, p.grad.tolist())
