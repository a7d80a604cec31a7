# GF003 safe fix: gradients are cleared between the backward calls by `w._grad = None` (what
# zero_grad(set_to_none=True) does). Original keeps only l2's gradient; rewrite has l1's + l2's.
import torch
torch.set_num_threads(1)
torch.manual_seed(0)

w = torch.randn(3, requires_grad=True)
x = torch.randn(5, 3)


def step():
    out = x @ w
    l1 = out.pow(2).mean()
    l2 = out.tanh().mean()
    l1.backward(retain_graph=True)
    w._grad = None
    l2.backward()


step()
print("w.grad", w.grad.tolist())
