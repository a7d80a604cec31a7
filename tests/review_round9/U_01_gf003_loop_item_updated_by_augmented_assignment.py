# GF003 safe merge wrong: `for t in bufs: t += h` updates the item in place (a tensor's `__iadd__`), though it also binds `t`: the items loop (`_items_kept`) counted only method updates and stores, and `_tensor_read` took the augmented assignment for a binding; `bufs[0]` holds h's graph, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    bufs = [torch.zeros(3)]
    for t in bufs:
        t += h
    for step in range(3):
        l1 = (bufs[0] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
