# GF005 safe fix wrong: Fin.finish() (a staticmethod called on the class) backpropagates loss again; the class itself is not a recognised receiver.
import contextlib
import threading
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Fin:
    @staticmethod
    def finish():
        loss.backward()
        print("again", w.grad)

if __name__ == "__main__":
    pass
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w)
    Fin.finish()
