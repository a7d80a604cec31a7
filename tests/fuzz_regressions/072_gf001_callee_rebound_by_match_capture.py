# Review regression (review of stop 20: CalleeClassifier.assigned_values; the fix was offered as safe).
# codes: GF001
# differs: the same with a `match` capture pattern (`case crit_a:`), which libcst's ScopeProvider does not record as an assignment either (all capture forms: `case x`, `[*x]`, `{**x}`, `... as x`); pre-existing for plain `crit_a = lambda ...`.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
enc_a = nn.Linear(6, 4)
enc_b = nn.Linear(6, 4)
batch = torch.randn(5, 6)
w = nn.Parameter(torch.tensor(2.0))


def scaled(p, q):
    return w * F.mse_loss(p, q)  # owns a trainable tensor


crit_a, crit_b = (lambda p, q: F.mse_loss(p, q)), F.kl_div
match scaled:
    case crit_a:
        pass


def step():
    fa = enc_a(batch)
    fb = enc_b(batch)
    l1 = crit_a(fa.detach(), fb)
    l1.backward(retain_graph=True)
    l2 = -crit_a(fa, fb.detach())
    l2.backward()
