# GF003 safe merge wrong: `y = F.relu(buf, inplace=True)` is `buf` itself (`F.relu` was taken as a function whose result is new), and `y += h` writes h's graph into it; the merged backward frees h's graph and the next iteration raises.
import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    y = F.relu(buf, inplace=True)
    y += h
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
