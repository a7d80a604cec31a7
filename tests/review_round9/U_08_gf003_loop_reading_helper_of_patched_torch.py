# GF003 safe merge wrong: `loss_fn` only reads its parameter through `torch.mean` (`loops._reading_helpers`), but the file patches `torch.mean` to return its argument: `v = loss_fn(bufs[0])` is `bufs[0]`, `v.copy_(h)` writes h's graph into it, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
bufs = [torch.zeros(3)]
torch.mean = lambda t: t


def loss_fn(u):
    return torch.mean(u)


def train():
    h = (w * 2).tanh()
    v = loss_fn(bufs[0])
    v.copy_(h)
    for step in range(3):
        l1 = (bufs[0] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
