"""Elementwise loss on a large tensor: VQ-style codebook / commitment terms.

An encoder projects tokens to latents z_e; z_q are their codebook vectors
(code assignment precomputed to keep the upstream light).  The codebook loss
pulls z_q toward the detached z_e, the commitment loss (weight 0.25) pulls
z_e toward the detached z_q: MSE over every latent element, two backward
calls.  Cheap elementwise f: little to gain.

Size: GRADFIX_BENCH_SIZE=small|large (default small): 1M / 8M latent elements.
"""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("GRADFIX_BENCH_SIZE", "small")
TOKENS, DIM, CODES = {"small": (16384, 64, 512), "large": (131072, 64, 512)}[SIZE]

encoder = nn.Linear(DIM, DIM)
codebook = nn.Embedding(CODES, DIM)
opt = torch.optim.SGD([*encoder.parameters(), *codebook.parameters()], lr=1e-2)
tokens = torch.randn(TOKENS, DIM)
codes = torch.randint(0, CODES, (TOKENS,))
criterion = nn.MSELoss()


def step():
    opt.zero_grad()
    z_e = encoder(tokens)
    z_q = codebook(codes)
    codebook_loss = criterion(z_q, z_e.detach())
    codebook_loss.backward(retain_graph=True)
    commit_loss = 0.25 * criterion(z_q.detach(), z_e)
    commit_loss.backward()
    opt.step()
