# GF003: nn.Embedding(max_norm=...) renormalizes its weight in place on every forward.
# Between the passes `emb(idx)` bumps the weight's version; l1's graph saved that weight
# (tied output head). Original: l1's backward already ran. Merged: RuntimeError.
import torch
import torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)

emb = nn.Embedding(5, 3, max_norm=0.5)
h = torch.randn(4, 3, requires_grad=True)
idx = torch.tensor([0, 1, 2])


def step():
    logits = h @ emb.weight.t()  # tied weights
    l1 = logits.pow(2).sum()
    l1.backward(retain_graph=True)
    e = emb(idx)
    l2 = e.sum()
    l2.backward()


step()
print("emb.weight.grad", [round(v, 5) for v in emb.weight.grad.flatten().tolist()])
