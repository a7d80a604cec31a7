# GF002 safe fix that crashes: a reduction function passed as an argument, the same in both
# terms, is wrapped as `grad_scale(torch.mean, 1.0 + BETA)`, which raises TypeError.
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
BETA = 0.25
z_e = torch.randn(4, 3, requires_grad=True)
z_q = torch.randn(4, 3, requires_grad=True)


def dist(a, b, reduce):
    return reduce((a - b) ** 2)


def step():
    loss = dist(z_q, z_e.detach(), torch.mean) + BETA * dist(z_q.detach(), z_e, torch.mean)
    loss.backward()


step()
print("z_e.grad", [round(v, 4) for v in z_e.grad.flatten().tolist()])
print("z_q.grad", [round(v, 4) for v in z_q.grad.flatten().tolist()])
