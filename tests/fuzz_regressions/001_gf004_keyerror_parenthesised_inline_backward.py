# Fuzz regression 001 (found by tests/test_fuzz.py, shrunk by hand).
# codes: GF004
# differs: gradfix itself raises: GF004's _run sorts candidate terms by
#   PositionProvider metadata of a call inside a parenthesised inline loss
#   `(f(a.detach(), b)).backward(...)`, which has no position: KeyError.
#   (GF001 alone reports and fixes this step; selecting the default rules crashes.)
import torch
import torch.nn.functional as F

a = torch.randn(4, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)


def step():
    (F.mse_loss(a.detach(), b)).backward(retain_graph=True)
    (F.mse_loss(a, b.detach())).backward()
