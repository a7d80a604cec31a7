import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


import shared_graph


def step():
    loss = torch.mean(shared_graph.h ** 2)
    loss.backward(retain_graph=True)
