# Review regression (stop 19: a review of the day's changes found it; the fix was offered as safe).
# codes: GF001
# differs: through `inspect.currentframe().f_globals`.
import torch
import torch.nn.functional as F
import inspect
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
W = 0.25
WT = torch.tensor(0.25, requires_grad=True)


def set_w():
    inspect.currentframe().f_globals['W'] = WT


def step():
    set_w()
    l1 = F.mse_loss(a.detach(), b)
    l1.backward(retain_graph=True)
    l2 = W * F.mse_loss(a, b.detach())
    l2.backward()
