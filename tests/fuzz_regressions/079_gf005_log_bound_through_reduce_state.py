# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF005
# differs: `copy.copy` of an object whose `__reduce__` returns a state dict `{"log": keep_graph}`: the copy module stores it into the new object's `__dict__` (copyreg protocol), with no attribute store, setattr or namespace dict in the file.
import copy
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)


def keep_graph(name, value):
    value.sum().backward()


class Tracker:
    pass


class Recipe:
    def __reduce__(self):
        return (Tracker, (), {"log": keep_graph})  # copy sets the state as the new object's attributes


tracker = copy.copy(Recipe())


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
