# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF005
# differs: `types.SimpleNamespace(log=keep_graph)` binds a function of the file that backpropagates to `log` by a keyword argument, which bound_attribute_names does not count (also argparse.Namespace(log=...)); the later `tracker.log` needs the retained graph.
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)


def keep_graph(name, value):
    value.sum().backward()

import types
tracker = types.SimpleNamespace(log=keep_graph)


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
