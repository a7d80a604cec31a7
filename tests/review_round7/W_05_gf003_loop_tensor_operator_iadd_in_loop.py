# GF003 safe merge wrong: `operator.iadd(buf, out)` in the loop adds each iteration's graph into `buf` in place (a call given `buf` in the loop was not checked); the merged backward frees the first iteration's graph and the second raises.
import torch
import operator

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    pass
    for step in range(3):
        out = (w * 3).tanh()
        operator.iadd(buf, out)
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
