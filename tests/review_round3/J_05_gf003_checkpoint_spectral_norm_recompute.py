# GF003 safe fix wrong: a non-reentrant checkpoint recomputes the block in every backward pass, and
# spectral_norm's power iteration updates `u` at each recompute: two passes see other weights than one.
# Gradients differ (preserve_rng_state is the default True, so gradfix trusts the checkpoint).
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
block = nn.Sequential(nn.utils.spectral_norm(nn.Linear(4, 8)), nn.ReLU(), nn.Linear(8, 4))
x = torch.randn(16, 4)


def step():
    h = checkpoint(block, x, use_reentrant=False)
    l1 = h.pow(2).mean()
    l1.backward(retain_graph=True)
    l2 = h.tanh().mean()
    l2.backward()


if __name__ == "__main__":
    step()
    print(block[0].weight_orig.grad[0], block[2].weight.grad[0])
