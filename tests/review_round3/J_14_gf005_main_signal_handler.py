# GF005 safe fix wrong: a signal handler of the file, registered before the backward, backpropagates
# `loss` when `signal.raise_signal` runs after it. Rewrite raises.
import signal
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def on_usr1(signum, frame):
    loss.backward()


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, on_usr1)
    h = (w * 2).tanh()
    loss = h.sum()
    loss.backward(retain_graph=True)
    signal.raise_signal(signal.SIGUSR1)
    print(w)
