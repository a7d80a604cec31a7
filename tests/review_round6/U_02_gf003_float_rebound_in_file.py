# GF003 safe merge wrong: `float` is a function of the file that returns its argument: `return float(l1)` hands the loss, whose graph the merged backward frees, to the caller, which backpropagates it.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def float(t):
    return t


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    return float(l1)


if __name__ == "__main__":
    step().backward()
    print(w.grad.tolist())
