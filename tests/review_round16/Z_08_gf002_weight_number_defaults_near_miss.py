# near miss: defaults that are numbers (beta=-0.25 as a negative literal, gamma=GAMMA a number constant of the file, delta=None unused): stays safe and exact
import torch
import torch.nn as nn
import torch.nn.functional as F

GAMMA = 2


class VQ(nn.Module):
    def __init__(self, beta=-0.25, delta=None):
        super().__init__()
        self.beta = beta
        self.delta = delta

    def forward(self, z, t, gamma=GAMMA):
        loss = gamma * F.mse_loss(t, z.detach()) + self.beta * F.mse_loss(t.detach(), z)
        return loss


torch.manual_seed(0)
m = VQ()
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
m(z, t).backward()
print(z.grad, t.grad)
