# GF002: the weight cancels in a numeric correction (self.alpha * f(t.detach(), z) + (2 - self.alpha) * f(t, z.detach()), correction 1): the rewrite leaves alpha out of the graph, grad None where the original gave zero
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mix(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, z, t):
        loss = self.alpha * F.mse_loss(t.detach(), z) + (2 - self.alpha) * F.mse_loss(t, z.detach())
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
