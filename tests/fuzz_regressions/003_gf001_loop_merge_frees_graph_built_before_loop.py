# Fuzz regression 003 (found by tests/test_fuzz.py campaign, shrunk by hand).
# codes: GF001
# differs: the rewrite raises. GF001's one pass replaces
#   `l1.backward(retain_graph=True) ... l2.backward()` inside a loop with one backward that
#   does not retain the graph; `y = torch.cos(b)` is built once before the loop, only the first
#   pass backpropagates through it, so in the original the graph through cos survives
#   iteration 1; after the rewrite iteration 2 backpropagates through a freed graph.
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
b = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)


def step():
    x = a + 0.5
    y = torch.cos(b)
    for it in range(2):
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -F.mse_loss(x, y.detach())
        l2.backward()
