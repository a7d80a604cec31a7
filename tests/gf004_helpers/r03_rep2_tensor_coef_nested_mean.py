# Review reproducer (rep2_tensor_coef_nested_mean): a tensor weight between two nested means (each element of the term its own share).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(4, 4)
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
w = torch.rand(5, 2)  # per-element weights (a tensor coefficient)


def d(P, S):
    return (P * (P / S).log()).sum(-1)


def step():
    h = enc(torch.randn(2, 4))
    P = torch.softmax(h, -1)
    S = torch.softmax(-h, -1)
    b = torch.randn(2)
    l1 = (b + (w * d(P, S.detach())).mean()).mean()
    l2 = (w * (b + d(P.detach(), S)).mean()).mean()
    opt.zero_grad()
    l1.backward(retain_graph=True)
    l2.backward()
    opt.step()
