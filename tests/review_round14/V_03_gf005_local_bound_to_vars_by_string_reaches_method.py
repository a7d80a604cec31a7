# GF005 safe fix wrong: `vars = getattr(builtins, "vars")` binds a local named `vars` to the builtin, though such a local was taken for a plain variable: `vars(type(t))` reaches `update` by a computed name and calls it twice with one graph, which the fix frees after the first call.
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
    import builtins
    vars = getattr(builtins, "vars")
    for name, method in vars(type(t)).items():
        if name.startswith("upd"):
            print(round(method(t, h), 6))
            print(round(method(t, h), 6))



if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
