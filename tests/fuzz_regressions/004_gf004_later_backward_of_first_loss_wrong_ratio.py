# Fuzz regression 004 (found by tests/test_fuzz.py campaign, shrunk by hand).
# codes: GF004
# differs: gradients (b.grad). `loss1.backward(retain_graph=True)`, a gradient read
#   (`print(a.grad...)`, which ends the backward run), `loss2.backward(retain_graph=True)`,
#   then a later `(loss1 * 0.5).backward()`. GF004 takes `loss2` and `loss1 * 0.5` as the
#   backward run and scales the carried operand by the ratio of s and p there (0.5 : 1), but
#   loss1's first backward stays in place: s has coefficient 1.5 in the objective, so y's
#   gradient is scaled by 2.0 instead of 2/3. (Without the gradient read the run is
#   `loss1` + `loss1 * 0.5` against `loss2` and the fix is exact.)
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
b = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
c = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)


def step():
    x = a * 2.0
    y = b * 1.5
    s = F.mse_loss(x, y.detach())
    p = F.mse_loss(x.detach(), y)
    rec = (c ** 2).mean()
    loss1 = s + rec
    loss2 = p + rec
    loss1.backward(retain_graph=True)
    print(a.grad.norm().item())
    loss2.backward(retain_graph=True)
    (loss1 * 0.5).backward()
