import torch
import torch.nn.functional as F

torch.set_num_threads(1)
BETA = 0.25


class VQ:
    def __init__(self, z):
        self.z = z

    def loss(self, z_q):
        return self.reg + F.mse_loss(z_q, self.z.detach()) + BETA * F.mse_loss(z_q.detach(), self.z)


def _reg(self):
    self.z = self.z * 2  # e.g. a lazily applied rescaling
    return 0.0


VQ.reg = property(_reg)


if __name__ == "__main__":
    torch.manual_seed(0)
    z_e = torch.randn(4, 3, requires_grad=True)
    z_q = torch.randn(4, 3, requires_grad=True)
    loss = VQ(z_e).loss(z_q)
    loss.backward()
    print("loss", round(loss.item(), 6))
    print("z_e.grad[0]", [round(v, 6) for v in z_e.grad[0].tolist()])
