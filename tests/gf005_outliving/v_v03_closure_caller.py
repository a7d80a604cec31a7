# In-file callers (review, stop 22): a nested caller passes a local of the function around it (a module-level name of the same text is graph-free).
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)
h = torch.zeros(8, 1)


def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    h = (x @ w).tanh()

    def run():
        inner(h)

    run()
    run()
