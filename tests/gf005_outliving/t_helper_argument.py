# A helper of the file called twice with one graph-carrying argument (`inner(h); inner(h)`): the
# second call backpropagates through `h`'s graph again (in-file callers, stop 22).
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)



def inner(h):
    loss = h.pow(2).mean()
    loss.backward(retain_graph=True)


def step():
    h = (x @ w).tanh()
    inner(h)
    inner(h)
