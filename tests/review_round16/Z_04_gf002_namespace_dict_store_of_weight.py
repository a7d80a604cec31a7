# GF002: the file stores the weight into the instance's namespace dict by its name (vars(self)["beta"] = a tensor of two): the safe rewrite raises where the original ran
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQ(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def widen(self):
        vars(self)["beta"] = torch.tensor([self.beta, 2 * self.beta])

    def forward(self, z, t):
        loss = F.mse_loss(t, z.detach()) + self.beta * F.mse_loss(t.detach(), z)
        return loss.sum()


torch.manual_seed(0)
m = VQ(0.25)
m.widen()
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
m(z, t).backward()
print(z.grad)
