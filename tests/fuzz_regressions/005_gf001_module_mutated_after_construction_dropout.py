# Fuzz regression 005 (found by tests/test_fuzz.py campaign, shrunk by hand).
# codes: GF001
# differs: gradients and parameters' grads. `crit` is built as Linear/LeakyReLU/Linear and
#   proven deterministic from its constructor, but `crit.append(nn.Dropout(0.5))` at module
#   level adds a dropout layer afterwards: the one evaluation of the rewrite draws one dropout
#   mask where the original drew two. (Same with `crit[1] = nn.Dropout(0.5)`; GF002 and GF004
#   give the same wrong safe fix.)
import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
crit = nn.Sequential(nn.Linear(6, 4), nn.LeakyReLU(0.2), nn.Linear(4, 3))
crit.append(nn.Dropout(0.5))


def step():
    x = a * 2.0
    y = b * 1.5
    l1 = crit(torch.cat([x.detach(), y], -1)).mean()
    l1.backward(retain_graph=True)
    l2 = -crit(torch.cat([x, y.detach()], -1)).mean()
    l2.backward()
