# GF005 safe fix wrong: `finish`, which backpropagates `loss`, is registered with atexit before the
# backward line; 'later' is judged by line, not by when the code runs. Rewrite raises at exit.
import atexit
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def finish():
    loss.backward()
    print("at exit ok")


if __name__ == "__main__":
    atexit.register(finish)
    h = (w * 2).tanh()
    loss = h.sum()
    loss.backward(retain_graph=True)
    print(w)
