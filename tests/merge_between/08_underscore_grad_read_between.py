# GF003 safe fix: between the backward calls the gradient is read through `Tensor._grad` (the same
# property as .grad). Original: l1's gradient is there. Rewrite: no backward has run yet: None -> crash.
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
    g1 = w._grad.clone()
    l2.backward()
    return g1


g1 = step()
print("grad of l1 alone", g1.tolist())
print("w.grad", w.grad.tolist())
