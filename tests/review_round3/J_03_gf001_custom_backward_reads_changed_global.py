# GF001 safe fix, wrong: a gradient-reversal Function of the file scales its gradient by a
# module-level coefficient (DANN's lambda) that the step updates between the two passes.
# The backward is accepted as linear and stateless, and `LAMBDA = 0.5` as harmless between the
# passes; but the original's second pass reverses with 0.5, the merged pass (at the first
# backward's place) with 1.0. (A dict entry, `SCHEDULE["lambda"] = 0.5`, behaves the same.)
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
LAMBDA = 1.0


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * -LAMBDA


w = torch.randn(8, requires_grad=True)


def step():
    global LAMBDA
    h = GradReverse.apply(w)
    x = h[:4]
    y = h[4:]
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    LAMBDA = 0.5
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()


step()
print("w.grad", [round(v, 4) for v in w.grad.tolist()])
