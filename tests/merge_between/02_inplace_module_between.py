# GF003 safe fix: a module of the file built with inplace=True (`act = nn.ReLU(inplace=True)`)
# runs between the two backward calls on a tensor the first loss's graph saved.
# Original: l1's backward has already run when `act(h)` overwrites h in place: fine.
# Rewrite: the merged backward walks l1's graph after the in-place change: RuntimeError.
import torch
import torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)

lin = nn.Linear(3, 3)
act = nn.ReLU(inplace=True)
x = torch.randn(4, 3)


def step():
    h = lin(x)
    l1 = h.pow(2).sum()
    l1.backward(retain_graph=True)
    l2 = act(h).sum()
    l2.backward()


step()
for name, p in lin.named_parameters():
    print(name, p.grad.tolist())
