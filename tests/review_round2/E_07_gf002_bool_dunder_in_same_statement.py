import torch
import torch.nn.functional as F

torch.set_num_threads(1)
BETA = 0.25

class Flag:
    def __init__(self, vq):
        self.vq = vq

    def __bool__(self):
        self.vq.z = self.vq.z * 2
        return False


class VQ:
    def __init__(self, z):
        self.z = z
        self.flag = Flag(self)

    def loss(self, z_q):
        return 0.5 * F.mse_loss(z_q, self.z.detach()) + (1.0 if self.flag else 0.0) + 0.5 * F.mse_loss(z_q.detach(), self.z)

if __name__ == "__main__":
    torch.manual_seed(0)
    z_e = torch.randn(4, 3, requires_grad=True)
    z_q = torch.randn(4, 3, requires_grad=True)
    loss = VQ(z_e).loss(z_q)
    loss.backward()
    print("loss", round(loss.item(), 6))
    print("z_e.grad[0]", [round(v, 6) for v in z_e.grad[0].tolist()])
