# GF003 safe merge wrong: a torch module's result is followed as what may be its input (`nn.Identity` returns it), but a write into that result (`ident(buf).copy_(h)`) is rooted at `ident`, not `buf`, in the in-place updates: h's graph goes into `buf`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    ident = torch.nn.Identity()
    buf = torch.zeros(3)
    ident(buf).copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
