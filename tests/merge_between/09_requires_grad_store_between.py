# GF003 safe fix: the GAN 'freeze D' idiom between the backward calls, written as an attribute store
# (`p.requires_grad = False` over a list of D's parameters). Original: D keeps d_loss's gradient.
# Rewrite: D is frozen before the one backward: D's .grad stays None.
import torch
import torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)

G = nn.Linear(2, 3)
D = nn.Linear(3, 1)
d_params = list(D.parameters())
z = torch.randn(4, 2)


def step():
    score = D(G(z))
    d_loss = score.pow(2).mean()
    g_loss = -score.mean()
    d_loss.backward(retain_graph=True)
    for p in d_params:
        p.requires_grad = False
    g_loss.backward()


step()
print("D", [None if p.grad is None else p.grad.tolist() for p in D.parameters()])
print("G", [p.grad.tolist() for p in G.parameters()])
