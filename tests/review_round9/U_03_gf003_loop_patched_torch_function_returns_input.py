# GF003 safe merge wrong: the file patches `torch.mean` to return its argument; `torch.mean(buf)` was taken for a new tensor by its text (`_fresh_torch_call`), so `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
torch.mean = lambda t, *a, **k: t


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = torch.mean(buf)
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
