# GF001 safe fix that crashes: the critic module is passed to a helper as an argument, the same
# in both calls ("live in both"), so the rewrite wraps it as `grad_scale(critic, 0.0)`, which
# raises TypeError on an nn.Module. (Calling the parameter `net(...)` inside the helper is
# also taken as pure without looking at what `net` is.)
import torch
import torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)
critic = nn.Linear(12, 1)
x = torch.randn(5, 6, requires_grad=True)
y = torch.randn(5, 6, requires_grad=True)


def critic_score(net, a, b):
    return net(torch.cat([a, b], 1)).mean()


def step():
    l1 = critic_score(critic, x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * critic_score(critic, x, y.detach())
    l2.backward()


step()
print("x.grad", round(x.grad.sum().item(), 4), "y.grad", round(y.grad.sum().item(), 4))
print("critic", [p.grad.abs().sum().item() for p in critic.parameters()])
