# Near miss (GF003 stays safe and exact): the file stores torch settings and attributes of names no call reads as torch's (`torch.backends.cudnn.benchmark = False`, `Config.scale = 2.0`), and calls `torch.zeros_like(h)`, `h.detach()` that nothing patches.
import torch

torch.backends.cudnn.benchmark = False


class Config:
    pass


Config.scale = 2.0

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros_like(h)
    det = h.detach()
    for step in range(3):
        l1 = ((buf + det) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
