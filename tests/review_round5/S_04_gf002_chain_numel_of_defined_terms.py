# GF002 safe fix that crashes: the terms are counts (`.numel()` chained on the callee), bound to names above the sum; the rewrite rebuilds the sum as `m + (2.0 * m).detach()` on an int: AttributeError where the original printed 18.
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)


def prod(a, b):
    return a * b


def step():
    n1 = prod(x.detach(), y).numel()
    n2 = prod(x, y.detach()).numel()
    total = n1 + 2 * n2
    print("total", total)


step()
