# GF001 safe fix, wrong: the same unpreserved-RNG checkpoint, bound through functools.partial
# (the Hugging Face idiom `partial(checkpoint, **gradient_checkpointing_kwargs)`): the keyword
# sits on the `partial(...)` call, the checkpoint is called as `ckpt(...)`. Two backward passes
# recompute the dropout block twice with two masks, the merged pass once.
import functools
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
torch.set_num_threads(1)
torch.manual_seed(0)
block = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 8))
inp = torch.randn(8, 4)
ckpt = functools.partial(checkpoint, use_reentrant=False, preserve_rng_state=False)


def step():
    h = ckpt(block, inp)
    x = h[:, :4]
    y = h[:, 4:]
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()


step()
for name, p in block.named_parameters():
    print(name, [round(v, 5) for v in p.grad.flatten()[:4].tolist()])
