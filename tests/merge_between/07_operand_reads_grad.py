# GF001 safe fix: an operand reads `.grad` (`w + w.grad`, a SAM/look-ahead style point), which the
# first backward writes. Original: the second evaluation (after l1.backward) sees the updated w.grad.
# Rewrite: the one evaluation happens before any backward, with the old w.grad.
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)

w = torch.randn(3, requires_grad=True)
v = torch.randn(3, requires_grad=True)
w.grad = torch.zeros(3)


def step():
    l1 = F.mse_loss(v.detach(), w + w.grad)
    l1.backward(retain_graph=True)
    l2 = -F.mse_loss(v, (w + w.grad).detach())
    l2.backward()


step()
print(v.grad.tolist(), w.grad.tolist())
