"""GF005's case: a training-step function whose backward keeps the graph with `retain_graph=True`
though nothing backpropagates through it again. The MLP's activations (batch x width) dominate
the step's memory. GRADFIX_BENCH_SIZE=small|large picks the batch."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096 if os.environ.get("GRADFIX_BENCH_SIZE", "large") == "large" else 512
WIDTH = 1024

net = nn.Sequential(
    nn.Linear(256, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
    nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, 10),
)
opt = torch.optim.SGD(net.parameters(), lr=1e-3)
x = torch.randn(BATCH, 256)
y = torch.randint(0, 10, (BATCH,))
history = []


def train_step(x, y):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward(retain_graph=True)
    opt.step()
    history.append(loss.item())


def step():
    train_step(x, y)
