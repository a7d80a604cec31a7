# Review regression (stop 19, second review round, found with Lightning's `self.log`; the fix was offered as safe).
# codes: GF005
# differs: `tracker.log = keep_graph` binds a function of the file that backpropagates to a name trusted as a logger's (stop 20).
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)


def keep_graph(name, value):
    value.sum().backward()  # a "log" that backpropagates through the value it is given


class Tracker:
    pass


tracker = Tracker()
tracker.log = keep_graph


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
