# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF005
# differs: `collections.namedtuple("Tracker", "log")(keep_graph)` binds `log` as a field named by a string (also `dataclasses.make_dataclass("Tracker", [("log", object)])`).
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)


def keep_graph(name, value):
    value.sum().backward()

import collections
Tracker = collections.namedtuple("Tracker", "log")
tracker = Tracker(keep_graph)


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
