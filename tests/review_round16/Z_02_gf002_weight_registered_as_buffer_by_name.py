# GF002: the file binds the weight by its name as a string (register_buffer("beta", tensor of two)), which the setattr check missed: the safe rewrite raises where the original ran
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("beta", torch.tensor([0.25, 0.5]))

    def forward(self, z, t):
        loss = F.mse_loss(t, z.detach()) + self.beta * F.mse_loss(t.detach(), z)
        return loss.sum()


torch.manual_seed(0)
m = VQ()
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
m(z, t).backward()
print(z.grad)
