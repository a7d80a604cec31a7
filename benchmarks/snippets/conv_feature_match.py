"""Conv feature-matching loss with a fixed filter bank.

Two small decoders produce images (a generator sample and a reconstruction);
a fixed, non-trainable bank of 3x3 filters with ReLU and 2x2 average pooling
extracts a 3-level feature pyramid of each, and the per-level MSE between the
pyramids is the loss.  The generator is pulled toward the (detached)
reconstruction with weight 1 and the reconstruction toward the (detached)
sample with weight 0.5: two backward calls, general coefficients.

The 3x3 convolution is written as shifted slices and `einsum`, pooling with
`reshape(...).mean(...)`: gradfix proves those parameter-free (SAFE fix),
whereas `F.conv2d` / `F.avg_pool2d` are not on its allowlist of pure
functions, which would make the fix unsafe.

Size: GRADFIX_BENCH_SIZE=small|large (default small).
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE = os.environ.get("GRADFIX_BENCH_SIZE", "small")
# batch, image side, latent width, channels per pyramid level
BATCH, SIDE, LATENT, WIDTHS = {"small": (8, 32, 32, (3, 8, 16, 16)), "large": (16, 64, 64, (3, 16, 32, 32))}[SIZE]

dec_gen = nn.Linear(LATENT, 3 * SIDE * SIDE)
dec_rec = nn.Linear(LATENT, 3 * SIDE * SIDE)
opt = torch.optim.Adam([*dec_gen.parameters(), *dec_rec.parameters()], lr=2e-4)
z_gen = torch.randn(BATCH, LATENT)
z_rec = torch.randn(BATCH, LATENT)
# Fixed filter bank: out_channels x in_channels x 3 x 3 per level, never trained.
BANK = [torch.randn(o, i, 3, 3) / (3 * i**0.5) for i, o in zip(WIDTHS[:-1], WIDTHS[1:])]


def conv3x3(x, k):
    # Valid 3x3 convolution as a sum of 9 shifted 1x1 convolutions.
    h = x.shape[2] - 2
    w = x.shape[3] - 2
    out = 0.0
    for i in range(3):
        for j in range(3):
            out = out + torch.einsum("bchw,oc->bohw", x[:, :, i : i + h, j : j + w], k[:, :, i, j])
    return out


def pool2(x):
    b, c, h, w = x.shape
    x = x[:, :, : h - h % 2, : w - w % 2]
    return x.reshape(b, c, h // 2, 2, w // 2, 2).mean(dim=(3, 5))


def feature_match(a, b, bank):
    loss = F.mse_loss(a, b)
    for k in bank:
        a = pool2(F.relu(conv3x3(a, k)))
        b = pool2(F.relu(conv3x3(b, k)))
        loss = loss + F.mse_loss(a, b)
    return loss


def step():
    opt.zero_grad()
    fake = torch.tanh(dec_gen(z_gen)).view(BATCH, 3, SIDE, SIDE)
    recon = torch.tanh(dec_rec(z_rec)).view(BATCH, 3, SIDE, SIDE)
    loss_gen = feature_match(fake, recon.detach(), BANK)
    loss_gen.backward(retain_graph=True)
    loss_rec = 0.5 * feature_match(fake.detach(), recon, BANK)
    loss_rec.backward()
    opt.step()
