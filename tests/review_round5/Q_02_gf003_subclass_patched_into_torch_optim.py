# GF003 safe merge wrong (d28c193): `torch.optim.SGD = Again` patches a subclass of the file into torch; `self.opt.step()` backpropagates the kept loss again.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
keep = []


class Again(torch.optim.SGD):
    def step(self, closure=None):
        keep[0].backward()
        return super().step(closure)


torch.optim.SGD = Again


class Trainer:
    def __init__(self):
        self.opt = torch.optim.SGD([w], lr=0.1)

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
