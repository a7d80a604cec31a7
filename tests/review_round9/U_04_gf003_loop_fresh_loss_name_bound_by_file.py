# GF003 safe merge wrong: `F` is a class of the file, not `torch.nn.functional`; `F.mse_loss(buf, buf)` was taken for a new tensor by its text (`_fresh_torch_call`) and returns `buf`, so `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import torch


class F:
    @staticmethod
    def mse_loss(u, v):
        return u


torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = F.mse_loss(buf, buf)
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
