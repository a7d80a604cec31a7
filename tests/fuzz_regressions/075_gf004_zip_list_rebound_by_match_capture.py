# Review regression (review of stop 20: CalleeClassifier.assigned_values; the fix was offered as safe).
# codes: GF004
# differs: the same with `match iter(series): case series: pass` (a capture pattern binding, not recorded by libcst's scopes).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
xs = torch.randn(3, 4, 6)
k = 3.0


def kl(p, q):
    return (p.softmax(-1) * (p.log_softmax(-1) - q.log_softmax(-1))).sum(-1).mean()

def step():
    series, prior = [enc(xs[i]) for i in range(3)], [pri(xs[i]) for i in range(3)]
    match iter(series):
        case series:
            pass
    rec = (enc(xs) - xs).pow(2).mean()
    s_loss = sum([kl(s, p.detach()) for s, p in zip(series, prior)])
    p_loss = sum([kl(s.detach(), p) for s, p in zip(series, prior)])
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
