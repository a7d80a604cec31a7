# GF003 safe merge wrong (d28c193): `object.__setattr__(self, 'opt', Fin())` replaces the optimizer; `self.opt.step()` backpropagates again.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
keep = []


class Fin:
    def step(self):
        keep[0].backward()


class Trainer:
    def __init__(self):
        self.opt = torch.optim.SGD([w], lr=0.1)
        object.__setattr__(self, 'opt', Fin())

    def step(self):
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
        keep.append(l1)
        l1.backward(retain_graph=True)
        l2.backward()
        print(w.grad.tolist())
        self.opt.step()


if __name__ == "__main__":
    Trainer().step()
