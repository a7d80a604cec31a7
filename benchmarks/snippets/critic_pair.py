"""Discriminator-style critic on a pair of encodings (f-dominated).

Two trainable encoders map two views of a batch to encodings; a frozen
random-feature MLP critic (5 fixed weight matrices with LeakyReLU, weights
created at module level, not trainable) scores the pair.  Encoder A is
trained to raise the critic's score, encoder B to lower it, written the
usual two-backward way with complementary `.detach()`.

The critic's weights are passed as an argument (`FROZEN`), so gradfix can
prove the callee parameter-free and its fix is SAFE; the same critic as an
`nn.Module` would be an unsafe fix (it may own trainable parameters).

Size: GRADFIX_BENCH_SIZE=small|large (default small).
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE = os.environ.get("GRADFIX_BENCH_SIZE", "small")
# batch, input features, encoding width, critic hidden width
BATCH, IN, ENC, HID = {"small": (64, 64, 128, 256), "large": (256, 128, 512, 1024)}[SIZE]

enc_a = nn.Sequential(nn.Linear(IN, ENC), nn.Tanh())
enc_b = nn.Sequential(nn.Linear(IN, ENC), nn.Tanh())
opt = torch.optim.SGD([*enc_a.parameters(), *enc_b.parameters()], lr=1e-3)
view_a = torch.randn(BATCH, IN)
view_b = torch.randn(BATCH, IN)

# Frozen critic: fixed random features, never trained.
_shapes = [(2 * ENC, HID), (HID, HID), (HID, HID), (HID, HID), (HID, 1)]
FROZEN = tuple(torch.randn(i, o) / i**0.5 for i, o in _shapes)


def critic(u, v, weights):
    h = torch.cat([u, v], dim=1)
    for w in weights[:-1]:
        h = F.leaky_relu(h @ w, 0.2)
    return torch.mean(h @ weights[-1])


def step():
    opt.zero_grad()
    za = enc_a(view_a)
    zb = enc_b(view_b)
    loss_a = critic(za.detach(), zb, FROZEN)
    loss_a.backward(retain_graph=True)
    loss_b = -critic(za, zb.detach(), FROZEN)
    loss_b.backward()
    opt.step()
