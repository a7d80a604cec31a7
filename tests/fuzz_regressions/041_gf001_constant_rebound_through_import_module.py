# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001
# differs: `importlib.import_module(__name__).W = WT` (before stop 19 too).
import torch
import torch.nn.functional as F
import importlib
_me = importlib.import_module(__name__)
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
W = 0.25
WT = torch.tensor(0.25, requires_grad=True)


def set_w():
    _me.W = WT


def step():
    set_w()
    l1 = F.mse_loss(a.detach(), b)
    l1.backward(retain_graph=True)
    l2 = W * F.mse_loss(a, b.detach())
    l2.backward()
