# GF005 safe fix wrong: fins[0].finish() (an instance of the file held in a list) backpropagates loss again.
import contextlib
import threading
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Fin:
    def finish(self):
        loss.backward()
        print("again", w.grad)


fins = [Fin()]

if __name__ == "__main__":
    pass
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w)
    fins[0].finish()
