# GF003 safe merge wrong: `v = buf; v.copy_(out)` in the loop: each iteration writes its graph into `buf` (a tensor handed on was checked only before the loop); the merged backward frees the first iteration's graph and the second raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    pass
    for step in range(3):
        out = (w * 3).tanh()
        v = buf
        v.copy_(out)
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
