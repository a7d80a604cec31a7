# GF001 safe fix, wrong: a class decorator of the file returns a subclass (`class Noisy(cls)`,
# its base a parameter) that overrides `crit` with a noisy version. gradfix does not relate
# `Noisy` to `Aligner` and proves `self.crit` from `Aligner`'s own def: the original draws
# noise twice, the rewrite once.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)


def input_noise(cls):
    class Noisy(cls):
        def crit(self, a, b):
            return super().crit(a + 0.1 * torch.randn_like(a), b)
    return Noisy


@input_noise
class Aligner:
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
