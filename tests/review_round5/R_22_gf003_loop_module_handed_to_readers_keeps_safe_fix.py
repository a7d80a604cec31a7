# Reach (not a bug): a model handed before the loop only to `nn.init.xavier_uniform_(model.weight)`, `print(model)` and `SGD(model.parameters())`, its param groups' learning rate set in the loop: the merge stays safe.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    model = nn.Linear(3, 3)
    nn.init.xavier_uniform_(model.weight)
    print(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        for g in opt.param_groups:
            g["lr"] = 0.1 / (step + 1)
        opt.zero_grad()
        out = model(w)
        l1 = (out * w).sum()
        l2 = (out * out).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        opt.step()
    print(model.weight)


if __name__ == "__main__":
    train()
    print(w.grad)
