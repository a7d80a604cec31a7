# Fuzz regression 006 (found by tests/test_fuzz.py campaign, shrunk by hand).
# codes: GF001
# differs: gradients (b.grad). `x[0] = 0.0` between the passes writes in place into x, the
#   base of the operand view `x.view(-1, 3)`, so the second evaluation sees another x; it is
#   not treated as a write into the operand and the one pass evaluates `dist` on the old x.
#   (With a plain name operand `x` there is no finding, as it should be; with the losses
#   named, `l2 = ...`, the safe fix's grad_scale view raises instead.)
import torch

a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
b = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
dist = lambda u, v: (u * torch.tanh(v)).sum()


def step():
    x = a * 2.0
    y = b * 1.5
    (dist(x.view(-1, 3).detach(), y.view(-1, 3))).backward(retain_graph=True)
    x[0] = 0.0
    (3 * dist(x.view(-1, 3), y.view(-1, 3).detach())).backward()
