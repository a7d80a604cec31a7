# GF001 safe fix, wrong: activation checkpoint with preserve_rng_state=False around a block with
# dropout (the shape of tests/merge_between/06, fixed there by the call's name), here imported
# under another name (`checkpoint as ckpt`). Each backward pass recomputes the block and draws a
# new dropout mask: two passes draw two, the merged pass one.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint as ckpt
torch.set_num_threads(1)
torch.manual_seed(0)
block = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 8))
inp = torch.randn(8, 4)


def step():
    h = ckpt(block, inp, use_reentrant=False, preserve_rng_state=False)
    x = h[:, :4]
    y = h[:, 4:]
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()


step()
for name, p in block.named_parameters():
    print(name, [round(v, 5) for v in p.grad.flatten()[:4].tolist()])
