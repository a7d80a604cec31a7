# GF001 safe fix, wrong: the callee draws random numbers through a default argument
# (`noise=torch.randn_like`). The body check resolves the call `noise(a)` only as "a parameter"
# and accepts `torch.randn_like` as a default because it is a torch name. The original draws
# two noise samples (one per evaluation), the rewrite one: x.grad changes.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = torch.randn(6, requires_grad=True)


def perturbed_gap(a, b, noise=torch.randn_like):
    return F.mse_loss(a + 0.1 * noise(a), b)


def step():
    l1 = perturbed_gap(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * perturbed_gap(x, y.detach())
    l2.backward()


step()
print("x.grad", [round(v, 4) for v in x.grad.tolist()])
print("y.grad", [round(v, 4) for v in y.grad.tolist()])
