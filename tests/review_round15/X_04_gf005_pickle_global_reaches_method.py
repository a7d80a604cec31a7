# GF005 safe fix wrong: `pickle.loads` resolves a dotted global from bytes built of parts (`t.up` + `date`), which no check of names reached by strings knew: `update` is called twice with one graph, which the fix frees after the first call.
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
    import pickle
    method = pickle.loads(b"\x80\x04c__main__\nt.up" + b"date\n.")
    print(round(method(h), 6))
    print(round(method(h), 6))



if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
