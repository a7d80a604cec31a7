"""Tiny f where fixed per-call costs dominate: prototype pull/push.

A small embedding head maps a few samples to embeddings; each is pulled
toward its class prototype (detached), and the prototypes are pushed away
from the (detached) embeddings with weight 0.5.  A few dozen elements: the
step time is Python, dispatcher and autograd-engine overhead, so the cost of
the `grad_scale` op itself decides whether the rewrite pays.

Size: GRADFIX_BENCH_SIZE=small|large (default small); both are tiny.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE = os.environ.get("GRADFIX_BENCH_SIZE", "small")
BATCH, IN, EMB, CLASSES = {"small": (4, 16, 8, 2), "large": (32, 32, 32, 8)}[SIZE]

head = nn.Linear(IN, EMB)
prototypes = nn.Parameter(torch.randn(CLASSES, EMB))
opt = torch.optim.SGD([*head.parameters(), prototypes], lr=1e-2)
samples = torch.randn(BATCH, IN)
labels = torch.arange(BATCH) % CLASSES


def step():
    opt.zero_grad()
    emb = head(samples)
    protos = prototypes[labels]
    pull = F.mse_loss(emb, protos.detach())
    pull.backward(retain_graph=True)
    push = -0.5 * F.mse_loss(emb.detach(), protos)
    push.backward()
    opt.step()
