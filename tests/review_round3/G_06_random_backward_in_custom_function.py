# GF001 safe fix, wrong: a custom autograd Function of the file masks its incoming gradient with
# a random mask drawn in `backward` (stochastic gradient dropping). The linearity check accepts
# `torch.rand_like(saved)` as a constant (any torch call on non-gradient values is CONST), but
# each backward call draws a new mask: mask1*g1 + mask2*g2 in the original, mask*(g1+g2) after.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)


class GradDrop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        mask = (torch.rand_like(x) > 0.5).float()
        return grad * mask * 2.0


w = torch.randn(8, requires_grad=True)


def step():
    h = GradDrop.apply(w)
    x = h[:4]
    y = h[4:]
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()


step()
print("w.grad", [round(v, 4) for v in w.grad.tolist()])
