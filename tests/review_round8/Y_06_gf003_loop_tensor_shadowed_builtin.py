# GF003 safe merge wrong: `abs` is a function of the file that returns its argument: `v = abs(buf)` is `buf`, and `v.copy_(h)` writes h's graph into it (builtins were judged by name); the merged backward frees h's graph and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

def abs(t):
    return t


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = abs(buf)
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
