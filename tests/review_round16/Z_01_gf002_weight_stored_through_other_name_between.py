# GF002: a store into the weight's attribute through another parameter holding the same object (owner.beta = 0.5) between the one evaluation and the sum: the rewrite scales by the old weight, the sum reads the new one
import torch
import torch.nn.functional as F


class Weights:
    def __init__(self, beta):
        self.beta = beta


def step(model, owner, z, t):
    a = F.mse_loss(t, z.detach())
    owner.beta = 0.5
    b = F.mse_loss(t.detach(), z)
    return a + model.beta * b


torch.manual_seed(0)
w = Weights(0.25)
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
step(w, w, z, t).backward()
print(z.grad)
