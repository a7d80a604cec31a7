# GF001 safe fix, wrong: a metaclass of the file replaces the method `crit` in the class
# namespace (`ns[method] = ...`) with a version that adds input noise. gradfix proves
# `self.crit` from its def in the class body and does not see the namespace store: the original
# draws noise twice, the rewrite once.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)


def with_input_noise(fn):
    def wrapped(self, a, b):
        return fn(self, a + 0.1 * torch.randn_like(a), b)
    return wrapped


class NoisyMethods(type):
    """Wraps the methods a class lists in `noisy` with input-noise injection."""

    def __new__(mcs, name, bases, ns):
        for method in ns.get("noisy", ()):
            ns[method] = with_input_noise(ns[method])
        return super().__new__(mcs, name, bases, ns)


class Aligner(metaclass=NoisyMethods):
    noisy = ("crit",)

    def crit(self, a, b):
        return F.mse_loss(a, b)

    def step(self, x, y):
        l1 = self.crit(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -1 * self.crit(x, y.detach())
        l2.backward()


x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)
Aligner().step(x, y)
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
