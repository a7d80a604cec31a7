# GF005 safe fix wrong: fin = make() returns a Fin of the file; fin.finish() backpropagates loss again, but only receivers bound directly to Cls() are recognised.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Fin:
    def finish(self):
        loss.backward()
        print("again", w.grad)


def make():
    return Fin()


if __name__ == "__main__":
    fin = make()
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w)
    fin.finish()
