import torch
import torch.nn.functional as F

torch.set_num_threads(1)
BETA = 0.25
from functools import cached_property as cached


class VQ:
    def __init__(self, z):
        self.z = z

    @cached
    def reg(self):
        self.z = self.z * 2
        return 0.0

    def loss(self, z_q):
        return self.reg + F.mse_loss(z_q, self.z.detach()) + BETA * F.mse_loss(z_q.detach(), self.z)

if __name__ == "__main__":
    torch.manual_seed(0)
    z_e = torch.randn(4, 3, requires_grad=True)
    z_q = torch.randn(4, 3, requires_grad=True)
    loss = VQ(z_e).loss(z_q)
    loss.backward()
    print("loss", round(loss.item(), 6))
    print("z_e.grad[0]", [round(v, 6) for v in z_e.grad[0].tolist()])
