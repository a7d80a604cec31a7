# GF001 safe fix, wrong: globals()["Aligner"] = type(..., (Aligner,), {"crit": noisy}) rebinds the class name to a subclass with a noisy crit; not seen: x.grad changes.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)


def with_input_noise(fn):
    def wrapped(self, a, b):
        return fn(self, a + 0.1 * torch.randn_like(a), b)
    return wrapped

class Aligner:
    def crit(self, a, b):
        return F.mse_loss(a, b)

    def step(self, x, y):
        l1 = self.crit(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -1 * self.crit(x, y.detach())
        l2.backward()


globals()["Aligner"] = type("Aligner", (Aligner,), {"crit": with_input_noise(Aligner.crit)})


x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)
Aligner().step(x, y)
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
