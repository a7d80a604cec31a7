# GF003 safe merge wrong: `__radd__ = kept.append` in a class body makes `l1 + acc` append the loss to a module list; the caller backpropagates it through the graph the merged backward frees.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
kept = []


class Acc:
    __radd__ = kept.append


acc = Acc()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    print(l1 + acc)


def train():
    step()
    kept[0].backward()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
