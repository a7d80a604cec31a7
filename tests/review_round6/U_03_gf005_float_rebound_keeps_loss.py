# GF005 safe fix wrong: `float` is rebound to a function that returns its argument, so `keep.append(float(loss))` keeps the loss; the caller backpropagates it again, which the removed retain_graph=True allowed.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
keep = []
float = lambda t: t


def step():
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    keep.append(float(loss))


if __name__ == "__main__":
    step()
    keep[0].backward()
    print(w.grad.tolist())
