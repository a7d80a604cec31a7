# GF002: a learnable mixing weight cancels in the correction ((1 - self.alpha) * f(t, z.detach()) + self.alpha * f(t.detach(), z)): the rewrite leaves alpha out of the graph, grad None where the original gave zero, so SGD's weight decay no longer steps it
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mix(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, z, t):
        loss = (1 - self.alpha) * F.mse_loss(t, z.detach()) + self.alpha * F.mse_loss(t.detach(), z)
        return loss


torch.manual_seed(0)
alpha = torch.tensor(0.3, requires_grad=True)
m = Mix(alpha)
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
opt = torch.optim.SGD([alpha, z, t], lr=0.1, weight_decay=0.5)
m(z, t).backward()
opt.step()
print(alpha.item(), z.grad.sum().item())
