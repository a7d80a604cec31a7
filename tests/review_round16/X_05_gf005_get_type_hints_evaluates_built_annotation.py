# GF005 safe fix wrong: `typing.get_type_hints` evaluates an annotation string as code, and the file builds one of parts (`"t.upd" + "ate(h)"`): `update` is called twice with one graph, which the fix frees after the first call.
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
    import typing

    def probe(x):
        pass

    probe.__annotations__ = {"x": "t.upd" + "ate(h)"}
    for _ in range(2):
        try:
            typing.get_type_hints(probe, localns={"t": t, "h": h})
        except TypeError:
            pass
        print(round(t.w.sum().item(), 6))


if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
