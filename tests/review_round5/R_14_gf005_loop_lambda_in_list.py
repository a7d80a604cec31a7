# GF005 (guard): retain_graph=True in a loop whose lambda, kept in a list, reads h built before the loop: removing it makes the next iteration raise. No finding (a loop reason).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    fns = [lambda: h]
    for step in range(3):
        loss = (fns[0]() * w).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    train()
    print(w.grad)
