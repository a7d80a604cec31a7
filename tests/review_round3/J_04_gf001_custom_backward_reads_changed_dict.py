# GF001 safe fix, wrong: as J_03, the gradient-reversal coefficient in a module-level dict
# (`SCHEDULE["lambda"] = 0.5` between the passes): the merged pass reverses with the old value.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
SCHEDULE = {"lambda": 1.0}


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * -SCHEDULE["lambda"]


w = torch.randn(8, requires_grad=True)


def step():
    h = GradReverse.apply(w)
    x = h[:4]
    y = h[4:]
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    SCHEDULE["lambda"] = 0.5
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()


step()
print("w.grad", [round(v, 4) for v in w.grad.tolist()])
