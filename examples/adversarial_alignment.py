"""A small adversarial feature-alignment step, the shape gradfix looks for.

Two heads produce encodings `x` and `y` of the same batch. The alignment loss
pulls `y` towards `x` (with `x` detached), and the adversarial loss pushes `x`
away from `y` (with `y` detached): the same distance computed twice, each time
with the other operand stop-gradiented, and both backpropagated.

Run `gradfix check examples/` to see the finding, `gradfix fix examples/` for
the rewrite, and `gradfix verify examples/adversarial_alignment.py` to execute
both versions and compare gradients and time.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128))
head_x = nn.Linear(128, 128)
head_y = nn.Linear(128, 128)
params = [*encoder.parameters(), *head_x.parameters(), *head_y.parameters()]
opt = torch.optim.SGD(params, lr=1e-3)
batch = torch.randn(1024, 64)
history = []


def feature_distance(u, v):
    # Parameter-free and costly: pairwise similarities within each side (batch x batch).
    su = torch.softmax(u @ u.t() / 16.0, dim=-1)
    sv = torch.softmax(v @ v.t() / 16.0, dim=-1)
    return (su - sv).pow(2).sum(dim=-1).mean() + F.mse_loss(u, v)


def step():
    opt.zero_grad()
    h = encoder(batch)
    x = head_x(h)
    y = head_y(h)
    loss_align = feature_distance(x.detach(), y)
    loss_align.backward(retain_graph=True)
    loss_adv = -0.5 * feature_distance(x, y.detach())
    loss_adv.backward()
    history.append((loss_align.item(), loss_adv.item()))
    opt.step()
