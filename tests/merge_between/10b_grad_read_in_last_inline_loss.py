# GF003 safe fix: the last backward's loss is written inline and reads .grad, which the first backward
# wrote. Rewrite: (l1 + ... * w.grad.norm()).backward() reads w.grad before any backward: None -> crash.
import torch
torch.set_num_threads(1)
torch.manual_seed(0)

w = torch.randn(3, requires_grad=True)
x = torch.randn(5, 3)


def step():
    out = x @ w
    l1 = out.pow(2).mean()
    l1.backward(retain_graph=True)
    (out.tanh().mean() * w.grad.norm()).backward()


step()
print("w.grad", w.grad.tolist())
