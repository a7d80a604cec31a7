# GF005 safe fix wrong: `yaml.load(..., Loader=yaml.Loader)` (PyYAML's unsafe loader) applies any callable a document names, here `builtins.eval` of code built of parts (`"...t.upd" + "ate(...)"`): `update` is called twice with one graph, which the fix frees after the first call.
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
    import yaml

    code = "__import__('__main__').t.upd" + "ate(__import__('__main__').h)"
    print(round(yaml.load("!!python/object/apply:builtins.eval [\"" + code + "\"]", Loader=yaml.Loader), 6))
    print(round(yaml.load("!!python/object/apply:builtins.eval [\"" + code + "\"]", Loader=yaml.Loader), 6))


if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    h = (v * 2).tanh()
    drive(t, h)
    print(t.w)
