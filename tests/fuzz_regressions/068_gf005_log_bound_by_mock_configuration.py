# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF005
# differs: `mock.Mock(**{"log.side_effect": keep_graph})`: code outside the file binds `log` to a function of the file handed to it; no attribute store, setattr or namespace dict in the file.
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)

from unittest import mock
def keep_graph(name, value):
    value.sum().backward()
tracker = mock.Mock(**{"log.side_effect": keep_graph})


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
