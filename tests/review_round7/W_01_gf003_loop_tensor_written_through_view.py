# GF003 safe merge wrong: `bv = buf[:]; bv.copy_(h)` writes h's graph into `buf` through a view bound to another name (a subscript or a method call on `buf` was taken as a read); the merged backward frees h's graph (built before the loop) and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    bv = buf[:]
    bv.copy_(h)
    for step in range(3):
        out = (w * 3).tanh()
        pass
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
