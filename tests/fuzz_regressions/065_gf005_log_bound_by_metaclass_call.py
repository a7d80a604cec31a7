# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF005
# differs: `abc.ABCMeta("Tracker", (), {"log": ...})` builds a class with `log` from a dict (also `type.__new__(type, ...)`, `types.new_class(..., body)` with `ns["log"] = ...`, a metaclass `__prepare__` returning `{"log": ...}`): only the builtin `type(name, bases, ns)` is counted.
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)


def keep_graph(name, value):
    value.sum().backward()

import abc
Tracker = abc.ABCMeta("Tracker", (), {"log": staticmethod(keep_graph)})
tracker = Tracker()


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
