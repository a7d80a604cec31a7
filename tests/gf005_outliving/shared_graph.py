import torch
torch.manual_seed(1)
w = torch.randn(4, 1, requires_grad=True)
h = (torch.randn(8, 4) @ w).tanh()
