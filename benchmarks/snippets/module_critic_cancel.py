"""A trainable critic module scored on a pair of encodings, its parameters' gradients cancelling.

The seed of DESIGN §2 with `f` an `nn.Module` that owns trainable parameters:
`critic(cat([za.detach(), zb]))` and `-critic(cat([za, zb.detach()]))`, both
backpropagated, give the critic's parameters 1·∂f/∂θ − 1·∂f/∂θ = 0. gradfix
proves the critic deterministic (an `nn.Sequential` of Linear and LeakyReLU
built in this file) and emits the module form: one call through
`scaled_params_call(critic, 0.0, ...)`, which runs the critic on detached
parameters (no weight-gradient work) and zero-fills their `.grad`.

Size: GRADFIX_BENCH_SIZE=small|large (default small).
"""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("GRADFIX_BENCH_SIZE", "small")
# batch, input features, encoding width, critic hidden width
BATCH, IN, ENC, HID = {"small": (64, 64, 128, 256), "large": (256, 128, 512, 1024)}[SIZE]

enc_a = nn.Sequential(nn.Linear(IN, ENC), nn.Tanh())
enc_b = nn.Sequential(nn.Linear(IN, ENC), nn.Tanh())
critic = nn.Sequential(
    nn.Linear(2 * ENC, HID), nn.LeakyReLU(0.2),
    nn.Linear(HID, HID), nn.LeakyReLU(0.2),
    nn.Linear(HID, HID), nn.LeakyReLU(0.2),
    nn.Linear(HID, HID), nn.LeakyReLU(0.2),
    nn.Linear(HID, 1),
)
opt = torch.optim.SGD([*enc_a.parameters(), *enc_b.parameters(), *critic.parameters()], lr=1e-3)
view_a = torch.randn(BATCH, IN)
view_b = torch.randn(BATCH, IN)


def step():
    opt.zero_grad()
    za = enc_a(view_a)
    zb = enc_b(view_b)
    loss_a = critic(torch.cat([za.detach(), zb], dim=1)).mean()
    loss_a.backward(retain_graph=True)
    loss_b = -critic(torch.cat([za, zb.detach()], dim=1)).mean()
    loss_b.backward()
    opt.step()
