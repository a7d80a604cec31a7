# GF001 safe fix, wrong: the class is built by type("Aligner", (Base,), {"crit": noisy}) and its namespace overrides crit with a noisy version; gradfix proves self.crit from Base's def. Original draws noise twice, rewrite once: x.grad changes.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)


def with_input_noise(fn):
    def wrapped(self, a, b):
        return fn(self, a + 0.1 * torch.randn_like(a), b)
    return wrapped


class Base:
    def crit(self, a, b):
        return F.mse_loss(a, b)

    def step(self, x, y):
        l1 = self.crit(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -1 * self.crit(x, y.detach())
        l2.backward()


Aligner = type("Aligner", (Base,), {"crit": with_input_noise(Base.crit)})


x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)
Aligner().step(x, y)
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
