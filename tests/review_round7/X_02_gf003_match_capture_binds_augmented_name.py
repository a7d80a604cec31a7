# GF003 safe merge wrong: `keep` is bound to a new list and also by a `match` capture of the module's list, so `keep += [l1]` may extend that list in place; the caller backpropagates the kept loss, whose graph the merged backward frees.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
kept = []


def step():
    keep = []
    match kept:
        case list() as keep:
            pass
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    keep += [l1]


def train():
    step()
    kept[0].backward()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
