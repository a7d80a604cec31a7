# near miss: a store into another attribute (owner.gamma) between the definitions leaves the weight as it was: stays safe and exact
import torch
import torch.nn.functional as F


class Weights:
    def __init__(self, beta):
        self.beta = beta


def step(model, owner, z, t):
    a = F.mse_loss(t, z.detach())
    owner.gamma = 0.5
    b = F.mse_loss(t.detach(), z)
    return a + model.beta * b


torch.manual_seed(0)
w = Weights(0.25)
z = torch.randn(3, 4, requires_grad=True)
t = torch.randn(3, 4, requires_grad=True)
step(w, w, z, t).backward()
print(z.grad)
