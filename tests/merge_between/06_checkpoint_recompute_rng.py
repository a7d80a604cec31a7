# GF003 safe fix: the losses share a checkpointed block with dropout and preserve_rng_state=False.
# Each backward pass recomputes the block, drawing a new dropout mask from the global RNG:
# two passes draw twice, the merged pass once -> different gradients and RNG state afterwards.
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint
torch.set_num_threads(1)
torch.manual_seed(0)

block = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 4))
x = torch.randn(8, 4)


def step():
    h = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)
    l1 = h.pow(2).mean()
    l2 = h.tanh().mean()
    l1.backward(retain_graph=True)
    l2.backward()


step()
for name, p in block.named_parameters():
    print(name, p.grad.flatten()[:6].tolist())
print("next draw", torch.rand(1).item())
