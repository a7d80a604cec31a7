# GF005 and a method called through `operator.methodcaller(name, h)`.
import operator

import torch

torch.set_num_threads(1)


class Trainer:
    def step(self, h):
        loss = (h * 2).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    w = torch.ones(3, requires_grad=True)
    h = w.exp()
    run = operator.methodcaller("step", h)
    t = Trainer()
    run(t)
    run(t)
    print("w.grad", [round(v, 5) for v in w.grad.tolist()])
