# GF005 and a method taken from its class's namespace: `Trainer.__dict__[name](t, h)`.
import torch

torch.set_num_threads(1)


class Trainer:
    def step(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    t = Trainer()
    for name, value in list(Trainer.__dict__.items()):
        if callable(value):
            value(t, h)
            value(t, h)
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
