# Review regression (review of stop 20: `.data` as a stop-gradient; the fix was offered as safe).
# codes: GF004
# differs: `[p.data for p in prior]`, `.data` item by item (iterated_stop accepts every detach_receiver spelling), is never checked for a tensor: exprs._by_data looks only at the top node (`X.data`, `X.data.clone()`), so Point.data is False; here each item is a PackedSequence whose `.data` keeps its gradient.
import torch
import torch.nn as nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

torch.manual_seed(0)
enc = nn.Linear(6, 6)
pri = nn.Linear(6, 6)
xs = torch.randn(3, 4, 2, 6)
k = 3.0


def values(v):
    return v[0] if isinstance(v, PackedSequence) else v.reshape(-1, 6)


def discrepancy(series, prior):
    total = 0.0
    for u in range(len(prior)):
        total = total + (values(series[u]) - values(prior[u])).pow(2).mean()
    return total


def step():
    series = [enc(xs[i]) for i in range(3)]
    prior = [pack_padded_sequence(pri(xs[i]), [4, 4]) for i in range(3)]  # `.data` of each keeps its gradient
    rec = (enc(xs) - xs).pow(2).mean()
    s_loss = discrepancy(series, [p.data for p in prior])
    p_loss = discrepancy([s.data for s in series], prior)
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
