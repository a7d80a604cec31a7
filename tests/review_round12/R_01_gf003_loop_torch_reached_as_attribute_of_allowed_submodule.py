# GF003 safe merge wrong: `F.torch` is torch, an attribute of the proven `torch.nn.functional` under a name of its own, so `F.torch.utils.data.TensorDataset` passed as a path under `nn` though it is `torch.utils.data`: `TensorDataset(...) + buf` is a `ConcatDataset` holding `buf`; `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = (F.torch.utils.data.TensorDataset(torch.zeros(0)) + buf).datasets[1]
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
