# GF005 safe fix wrong: `cb = finish if ... else None` binds a function that backpropagates the loss to another name; `cb()` runs it after the retain_graph=True the fix removes.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def finish():
    loss.backward()


if __name__ == '__main__':
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w.grad.tolist())
    cb = finish if w is not None else None
    cb()
    print(w.grad.tolist())
