# GF003 safe merge wrong: `t = bufs[0]; t.copy_(h)`: an item of a list from before the loop, bound to another name and written into (a subscript of a container was taken as a plain read); the merged backward frees h's graph and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    bufs = [torch.zeros(3)]
    t = bufs[0]
    t.copy_(h)
    for step in range(3):
        l1 = (bufs[0] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
