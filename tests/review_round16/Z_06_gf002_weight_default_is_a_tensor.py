# GF002: the constructor's default for the weight is a tensor of two elements (beta=torch.tensor([0.25, 1.0])), taken for a caller's number: the safe rewrite raises where the original ran
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQ(nn.Module):
    def __init__(self, beta=torch.tensor([0.25, 1.0])):
        super().__init__()
        self.beta = beta

    def forward(self, z, t):
        loss = F.mse_loss(t, z.detach()) + self.beta * F.mse_loss(t.detach(), z)
        return loss.sum()


torch.manual_seed(0)
m = VQ()
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
m(z, t).backward()
print(z.grad)
