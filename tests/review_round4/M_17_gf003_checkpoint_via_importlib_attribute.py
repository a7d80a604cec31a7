# GF003 safe merge wrong: torch.utils.checkpoint imported with importlib and taken as ckpt.checkpoint; the checkpoint reruns BatchNorm once per pass: running stats and num_batches_tracked differ.
import importlib
import torch
import torch.nn as nn

ckpt = importlib.import_module("torch.utils.checkpoint")
run_saved = ckpt.checkpoint

torch.manual_seed(0)
block = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 4))
x = torch.randn(16, 4)


def step():
    h = run_saved(block, x, use_reentrant=False)
    l1 = h.pow(2).mean()
    l1.backward(retain_graph=True)
    l2 = h.tanh().mean()
    l2.backward()


if __name__ == "__main__":
    step()
    print(block[1].running_mean[:4], block[1].num_batches_tracked)
