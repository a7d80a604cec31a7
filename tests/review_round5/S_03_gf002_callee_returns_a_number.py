# GF002 safe fix that crashes: the callee returns a Python number (`float(...)`); the sum of the two evaluations runs in the original, but the rewrite's detached correction `m + (0.5 * m).detach()` calls .detach() on a float: AttributeError.
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)


def score(a, b):
    return float((a * b).sum())


def step():
    total = score(x.detach(), y) + 0.5 * score(x, y.detach())
    print("total", round(total, 4))


step()
