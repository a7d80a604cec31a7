# GF002: the file binds the weight to a complex literal (self.beta = 0.5j), taken for a number: grad_scale refuses a complex scale, the safe rewrite raises where the original ran
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.beta = 0.5j

    def forward(self, z, t):
        loss = F.mse_loss(t, z.detach()) + self.beta * F.mse_loss(t.detach(), z)
        return loss.abs()


torch.manual_seed(0)
m = VQ()
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
m(z, t).backward()
print(z.grad, t.grad)
