# GF003 safe merge wrong (d28c193): `self.opt = nn.Linear(3, 1)` where `nn` is a class of the file, not torch.nn; its `step` backpropagates the kept loss again.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Stepper:
    def __init__(self, *a, **k):
        pass

    def step(self):
        keep[0].backward()


class nn:
    Linear = Stepper


keep = []


class Trainer:
    def __init__(self):
        self.opt = nn.Linear(3, 1)

    def step(self):
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
        keep.append(l1)
        l1.backward(retain_graph=True)
        l2.backward()
        self.opt.step()
        print(w.grad.tolist())


if __name__ == "__main__":
    Trainer().step()
