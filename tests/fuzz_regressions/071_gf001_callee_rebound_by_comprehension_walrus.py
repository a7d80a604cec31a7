# Review regression (review of stop 20: CalleeClassifier.assigned_values; the fix was offered as safe).
# codes: GF001
# differs: `crit_a, crit_b = (lambda ...), F.kl_div` resolves `crit_a` to the pure lambda (new unpacking in assigned_values), but `[crit_a := scaled for _ in range(1)]` rebinds it: a walrus inside a comprehension binds in the enclosing scope, which libcst's ScopeProvider does not record (with a plain `crit_a = lambda ...` this was already wrong before stop 20).
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
[crit_a := scaled for _ in range(1)]


def step():
    fa = enc_a(batch)
    fb = enc_b(batch)
    l1 = crit_a(fa.detach(), fb)
    l1.backward(retain_graph=True)
    l2 = -crit_a(fa, fb.detach())
    l2.backward()
