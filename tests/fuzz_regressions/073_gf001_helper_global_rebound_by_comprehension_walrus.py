# Review regression (review of stop 20: CalleeClassifier.assigned_values; the fix was offered as safe).
# codes: GF001
# differs: a helper's global coefficient `w, v = 2.0, 1.0` is taken as the number 2.0 (bodies.py via assigned_values, through the new unpacking), but `[w := scale for _ in range(1)]` rebinds it to a trainable Parameter: its gradient cancels to 0 in the original, not after the rewrite (pre-existing for `w = 2.0`).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc_a = nn.Linear(6, 4)
enc_b = nn.Linear(6, 4)
batch = torch.randn(5, 6)
scale = nn.Parameter(torch.tensor(2.0))
w, v = 2.0, 1.0
[w := scale for _ in range(1)]


def crit(p, q):
    return w * F.mse_loss(p, q)


def step():
    fa = enc_a(batch)
    fb = enc_b(batch)
    l1 = crit(fa.detach(), fb)
    l1.backward(retain_graph=True)
    l2 = -crit(fa, fb.detach())
    l2.backward()
