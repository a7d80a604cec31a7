# Near miss (GF005 stays safe and exact): the `string` module read for its constants, `logging.Formatter` with `{`-style fields, `str.format` of an attribute, `mock.patch.object` of a literal name and `typing.get_origin` reach no method of the file by a computed name.
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
    import logging
    import string
    import typing
    from unittest import mock

    print(len(string.ascii_lowercase), logging.Formatter("{message}", style="{").format(logging.makeLogRecord({"msg": "m"})))
    print("{0.w}".format(t)[:6], typing.get_origin(typing.List[int]).__name__)
    with mock.patch.object(torch, "manual_seed"):
        print(round(t.update(torch.ones(2)), 6))


if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
