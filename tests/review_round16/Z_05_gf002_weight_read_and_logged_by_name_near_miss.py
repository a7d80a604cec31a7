# near miss: the weight's name as a string only where it is read (getattr(config, "beta", 0.25), a config dict read, a logged dict's key): stays safe and exact
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQ(nn.Module):
    def __init__(self, config, extra):
        super().__init__()
        self.beta = getattr(config, "beta", 0.25)
        self.gamma = extra["beta"]
        self.logged = {}

    def forward(self, z, t):
        loss = F.mse_loss(t, z.detach()) + self.beta * F.mse_loss(t.detach(), z)
        self.logged = {"beta": self.beta, "gamma": self.gamma}
        return loss


class Config:
    beta = 0.5


torch.manual_seed(0)
m = VQ(Config(), {"beta": 0.1})
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
m(z, t).backward()
print(z.grad, m.logged)
