# GF003 safe merge wrong: the caller backpropagates again a loss the function kept in a list (`keep[0].backward()`).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
keep = []


def train_step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    keep.append(l1)
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    train_step()
    keep[0].backward()
    print(w.grad.tolist())
