# Review regression (review of stop 20: bound_attribute_names; the fix was offered as safe).
# codes: GF005
# differs: a module-level `def log(...)` that backpropagates, reached as an attribute of the file's own module object: `inspect.getmodule(log)` (also `sys.modules[__name__]`, `importlib.import_module(__name__)`): bound_attribute_names does not count the module's own global names.
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
batch = torch.randn(4, 4)

import inspect
def log(name, value):
    value.sum().backward()
tracker = inspect.getmodule(log)


def step():
    loss = net(batch).pow(2).mean()
    loss.backward(retain_graph=True)
    tracker.log("loss", loss)
