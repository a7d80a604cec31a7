# GF003 safe merge wrong: `nn.Parameter(h)` was read as torch's by its text (a class that detaches what it is given), but the file binds `nn` to a namespace whose `Parameter` returns `h * 1`, graph and all: the merged backward frees it, and the next iteration raises.
import torch
import types

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
nn = types.SimpleNamespace(Parameter=lambda t: t * 1)


def train():
    h = (w * 2).tanh()
    buf = nn.Parameter(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
