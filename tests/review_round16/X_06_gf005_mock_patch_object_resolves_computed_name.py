# GF005 safe fix wrong: `mock.patch.object(t, "upd" + "ate")` looks up an attribute by a name built of parts and `get_original()` hands the bound method back: `update` is called twice with one graph, which the fix frees after the first call.
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
    from unittest import mock

    method = mock.patch.object(t, "upd" + "ate").get_original()[0]
    print(round(method(h), 6))
    print(round(method(h), 6))


if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
