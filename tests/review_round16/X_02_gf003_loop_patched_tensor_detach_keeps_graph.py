# GF003 safe merge wrong: `h.detach()` was read as graph-free by its method name, but the file stores `torch.Tensor.detach = lambda t: t * 1`: `buf` holds h's graph, the merged backward frees it, and the next iteration raises.
import torch

torch.Tensor.detach = lambda t: t * 1

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    buf = h.detach()
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
