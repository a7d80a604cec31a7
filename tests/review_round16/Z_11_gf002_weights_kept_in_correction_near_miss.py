# near miss: two learnable weights that do not cancel ((1 - self.alpha) and self.beta): both stay in the correction, safe and exact, their gradients kept
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mix(nn.Module):
    def __init__(self, alpha, beta):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, z, t):
        loss = (1 - self.alpha) * F.mse_loss(t, z.detach()) + self.beta * F.mse_loss(t.detach(), z)
        return loss


torch.manual_seed(0)
alpha = torch.tensor(0.3, requires_grad=True)
beta = torch.tensor(0.6, requires_grad=True)
m = Mix(alpha, beta)
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
opt = torch.optim.SGD([alpha, beta, z, t], lr=0.1, weight_decay=0.5)
m(z, t).backward()
opt.step()
print(alpha.item(), beta.item(), z.grad.sum().item())
