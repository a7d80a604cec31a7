# GF003 safe merge wrong: `keep` is a parameter rebound to a new list only in a branch, so `keep += [l1]` may extend the caller's list in place; the caller backpropagates the kept loss, whose graph the merged backward frees.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step(keep=None):
    if keep is None:
        keep = []
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    keep += [l1]


def train():
    store = []
    step(store)
    store[0].backward()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
