# GF003 safe merge wrong: `torch.zeros_like(h)` was read as torch's by its text (a factory: no graph), but the file stores `torch.zeros_like = lambda t: t * 1` (graph-free itself, so `patch_reasons` lets it be): `buf` holds h's graph, the merged backward frees it, and the next iteration raises.
import torch

torch.zeros_like = lambda t: t * 1

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros_like(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
