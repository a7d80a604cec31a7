# GF003 safe merge wrong: `sorted([l1], key=kept.append)` runs the bound method on the loss, which the list keeps; the caller backpropagates it through the graph the merged backward frees.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
kept = []


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    sorted([l1], key=kept.append)


if __name__ == "__main__":
    step()
    kept[0].backward()
    print(w.grad.tolist())
