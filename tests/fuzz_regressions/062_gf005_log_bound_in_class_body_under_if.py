# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF005
# differs: a class body binding `log` inside an `if` (also `for log in [...]`, `[log := ...]`) is not counted: bound_attribute_names reads only the top-level simple statements and defs of a class body.
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)


def keep_graph(name, value):
    value.sum().backward()

class Tracker:
    if True:
        log = staticmethod(keep_graph)
tracker = Tracker()


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
