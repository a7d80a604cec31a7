# GF003 safe fix wrong: as 18 with BatchNorm in the checkpointed block: each recompute updates the
# running statistics; two passes update them twice, the merged pass once.
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
block = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 4))
x = torch.randn(16, 4)


def step():
    h = checkpoint(block, x, use_reentrant=False)
    l1 = h.pow(2).mean()
    l1.backward(retain_graph=True)
    l2 = h.tanh().mean()
    l2.backward()


if __name__ == "__main__":
    step()
    print(block[1].running_mean[:4], block[1].num_batches_tracked)
