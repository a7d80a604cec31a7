# GF005 safe fix wrong: a `string.Formatter` subclass resolves the format field `"{0.upd" + "ate}"` (a name built of parts) by getattr, and its `format_field` calls what it finds: `update` is called twice with one graph, which the fix frees after the first call.
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
    import string

    class Calling(string.Formatter):
        def format_field(self, value, spec):
            return str(round(value(h), 6))

    print(Calling().format("{0.upd" + "ate}", t))
    print(Calling().format("{0.upd" + "ate}", t))


if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
