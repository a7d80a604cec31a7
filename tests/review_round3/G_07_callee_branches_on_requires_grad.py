# GF001 safe fix, wrong: the callee reads `target.requires_grad` (attribute reads of arguments
# pass the purity check). In the original the first call's target is `x.detach()` (no grad),
# so it is smoothed; after the rewrite it is `grad_scale(x, -1.0)`, which requires grad, so it
# is not: the gradients of both x and y change.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)


def align(pred, target):
    # a target that carries no gradient is a fixed label: smooth it
    if not target.requires_grad:
        target = 0.9 * target
    return F.mse_loss(pred, target)


def step():
    l1 = align(y, x.detach())
    l1.backward(retain_graph=True)
    l2 = -1 * align(y.detach(), x)
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
