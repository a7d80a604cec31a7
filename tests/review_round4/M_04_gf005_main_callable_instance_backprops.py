# GF005 safe fix wrong: fin() calls Fin.__call__, which backpropagates loss again; a call of an instance of the file is not seen as code that backpropagates.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Fin:
    def __call__(self):
        loss.backward()
        print("again", w.grad)


fin = Fin()

if __name__ == "__main__":
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w)
    fin()
