# GF005 safe fix wrong: print(fin) runs Fin.__repr__, which backpropagates loss again; only __del__/__enter__/__exit__ count as implicit methods.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Fin:
    def __repr__(self):
        loss.backward()
        return repr(w.grad)


fin = Fin()

if __name__ == "__main__":
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w)
    print(fin)
