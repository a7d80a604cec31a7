# Fuzz regression (found by the campaign while adding GF002's if/else form; never on main).
# codes: GF002
# differs: the rewrite raised NameError: the other term's definition, removed just above the `if`, left its
#   blank line to the `if`, and the block's edit rewrote the `if` unchanged over the branches' edits (the sum
#   read `q_term`, bound nowhere). The `if` is now replaced whole.
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

K = 0.5
a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)

q = F.mse_loss(a, b.detach())
if K > 0.25:
    e = F.mse_loss(a.detach(), b)
else:
    e = F.mse_loss(a.detach(), b)
loss = q + e
loss.backward()
