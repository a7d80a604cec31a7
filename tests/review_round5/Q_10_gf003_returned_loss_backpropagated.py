# GF003 safe merge wrong: the function returns `l1`, whose graph the first pass kept; the caller backpropagates it again.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train_step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    return l1


if __name__ == "__main__":
    l = train_step()
    l.backward()
    print(w.grad.tolist())
