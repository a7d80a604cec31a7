# Review regression (stop 19, second review round; the fix was offered as safe).
# codes: GF001, GF002, GF003, GF004, GF005
# differs: the same between two backward passes (GF001).
import torch
import torch.nn.functional as F

a = torch.randn(2, 4, 3, requires_grad=True)
b = torch.randn(2, 4, 3, requires_grad=True)


def step():
    i = 0
    l1 = F.mse_loss(a[i][0].detach(), b[i][0])
    l1.backward(retain_graph=True)
    i = 1
    l2 = F.mse_loss(a[i][0], b[i][0].detach())
    l2.backward()
