# GF005 safe fix wrong: `pydoc.allmethods(type(t))` lists a class's methods by name (a dict of the functions, as `inspect.getmembers` does), which no check of class namespaces knew: `update` is called twice with one graph, which the fix frees after the first call.
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
    import pydoc
    for key, f in pydoc.allmethods(type(t)).items():
        if key.startswith("up"):
            print(round(f(t, h), 6))
            print(round(f(t, h), 6))



if __name__ == "__main__":
    t = Trainer()
    v = torch.rand(2, requires_grad=True)
    drive(t, (v * 2).tanh())
    print(t.w)
