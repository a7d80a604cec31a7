import torch

torch.manual_seed(0)
w = torch.randn(4, 1, requires_grad=True)
x = torch.randn(8, 4)



class Cfg:
    h = (x @ w).tanh()

    @classmethod
    def run(cls):
        loss = cls.h.pow(2).mean()
        loss.backward(retain_graph=True)


def step():
    Cfg.run()
