# GF005 safe fix wrong: `timeit.timeit` runs code given as a string in a namespace handed to it (`"t.upd" + "ate(h)"`, twice with `number=2`), which no check of names reached by strings knew: `update` is called twice with one graph, which the fix frees after the first call.
import torch

torch.manual_seed(0)


class Trainer:
    def __init__(self):
        self.w = torch.randn(2, requires_grad=True)
        self.opt = torch.optim.SGD([self.w], lr=0.1)

    def update(self, x):
        self.opt.zero_grad()
        loss = ((self.w * x) ** 2).sum()
        loss.backward(retain_graph=True)
        self.opt.step()
        return loss.item()


def drive(t, h):
    import timeit
    timeit.timeit("t.upd" + "ate(h); print(1)", globals=dict(t=t, h=h), number=2)



if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
