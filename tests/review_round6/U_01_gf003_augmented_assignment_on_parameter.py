# GF003 safe merge wrong: `keep += [l1]` extends the caller's list in place; the caller backpropagates the kept loss, whose graph the merged backward frees.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step(keep):
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    keep += [l1]


if __name__ == "__main__":
    kept = []
    step(kept)
    kept[0].backward()
    print(w.grad.tolist())
