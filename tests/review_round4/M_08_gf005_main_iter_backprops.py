# GF005 safe fix wrong: for g in fin runs Fin.__iter__, which backpropagates loss again.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Fin:
    def __iter__(self):
        loss.backward()
        return iter([w.grad])


fin = Fin()

if __name__ == "__main__":
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w)
    for g in fin:
        print(g)
