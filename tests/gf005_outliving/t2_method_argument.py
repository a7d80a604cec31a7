# A method called twice on one graph-carrying argument (`trainer.inner(h)` twice): the second call
# backpropagates through `h`'s graph again (in-file callers, stop 22).
import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)


class Trainer:
    def inner(self, h):
        loss = h.pow(2).mean()
        loss.backward(retain_graph=True)


trainer = Trainer()


def step():
    h = (x @ w).tanh()
    trainer.inner(h)
    trainer.inner(h)
