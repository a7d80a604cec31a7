# Reach (not a bug): a torch module switched to training by a statement (`model.train()`), moved (`model = model.to("cpu")`), another frozen by a loop that only switches `requires_grad` (`for p in head.parameters(): p.requires_grad_(False)`), parameters handed to an optimizer (`list(...) + list(...)`), gradients cleared and stepped in the loop: the merge stays safe.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    model = nn.Linear(3, 3)
    head = nn.Linear(3, 1)
    for p in head.parameters():
        p.requires_grad_(False)
    model.train()
    model = model.to("cpu")
    opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.1)
    x = torch.randn(3)
    for step in range(3):
        opt.zero_grad()
        out = head(model(x)) * w
        l1 = (out * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        opt.step()
    print(head.weight)


if __name__ == "__main__":
    train()
    print(w.grad)
