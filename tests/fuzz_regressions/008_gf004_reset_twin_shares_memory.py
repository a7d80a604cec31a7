# Fuzz regression 008 (found by a 2,000-step campaign at seed 241, shrunk by hand).
# codes: GF004
# differs: a value. In the reset branch the fix bound `s = dist_shared.detach()` and
#   `p = dist_shared`: one tensor's memory under two names, where the original's two evaluations
#   were two tensors. The next iteration's `p += ...` updated it in place, and so changed `s`.
#   A name bound to the bare detached value is now a copy (`build.detached(copy=True)`).
import torch

a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
b = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
log = []


def dist(u, v):
    d = u.clone()
    d -= v
    return (d * d).mean()


def step():
    xs = [a * 2.0, a + 0.25]
    ys = [b * 1.5, b + 0.25]
    for i in range(len(xs)):
        if i == 0:
            s = dist(ys[i], xs[i].detach())
            p = dist(ys[i].detach(), xs[i])
        else:
            s += dist(ys[i], xs[i].detach())
            p += dist(ys[i].detach(), xs[i])
    loss = 0.5 * s + 0.5 * p
    torch.autograd.backward(loss)
    log.append((s.item(), loss.item()))
