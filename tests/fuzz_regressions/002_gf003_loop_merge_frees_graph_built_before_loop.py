# Fuzz regression 002 (found by tests/test_fuzz.py campaign, shrunk by hand).
# codes: GF003
# differs: the rewrite raises. GF003 merges `l1.backward(retain_graph=True); l2.backward()`
#   inside a loop into `(l1 + l2).backward()`, dropping the retained graph; `y = torch.cos(b)`
#   is built once before the loop and only `l1` backpropagates through it, so the original's
#   `l2.backward()` leaves y's graph alive for the next iteration while the merged backward
#   frees it: "Trying to backward through the graph a second time" in iteration 2.
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
b = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)


def step():
    x = a + 0.5
    y = torch.cos(b)
    for it in range(2):
        l1 = F.mse_loss(x, y)
        l1.backward(retain_graph=True)
        l2 = F.mse_loss(x, y.detach())
        l2.backward()
