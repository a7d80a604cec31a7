# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF005
# differs: `operator.setitem(tracker.__dict__, "log", keep_graph)`: a namespace dict handed to an imported function counts as a read (`_read`: root in imported), but operator.setitem stores into it.
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)


def keep_graph(name, value):
    value.sum().backward()

import operator
class Tracker:
    pass
tracker = Tracker()
operator.setitem(tracker.__dict__, "log", keep_graph)


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
