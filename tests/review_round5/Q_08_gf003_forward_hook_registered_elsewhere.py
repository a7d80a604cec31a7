# GF003 safe merge wrong: a forward hook registered in another function backpropagates the kept loss when `lin(...)` runs after the merge.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
keep = []


def again(module, inputs, output):
    keep[0].backward()


def setup():
    lin = nn.Linear(3, 1)
    lin.register_forward_hook(again)
    return lin


def train_step(lin):
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    keep.append(l1)
    l1.backward(retain_graph=True)
    l2.backward()
    print(w.grad.tolist())
    lin(torch.ones(3))


if __name__ == "__main__":
    train_step(setup())
