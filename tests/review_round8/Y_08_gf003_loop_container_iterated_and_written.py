# GF003 safe merge wrong: `for t in bufs: t.copy_(h)`: the items of a list from before the loop, written into through the loop target (iterating a container was taken as a plain read); the merged backward frees h's graph and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    bufs = [torch.zeros(3)]
    for t in bufs:
        t.copy_(h)
    for step in range(3):
        l1 = (bufs[0] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
