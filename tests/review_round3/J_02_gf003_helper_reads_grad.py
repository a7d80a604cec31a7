# GF003 safe fix, wrong: a one-line helper of the file reads a gradient between the two passes;
# the merged pass moves the first pass's addition past the read.
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)


def grad_norm(t):
    return t.grad.norm()


def step():
    l1 = (w ** 2).sum()
    l2 = (w * 3).sum()
    l1.backward(retain_graph=True)
    print("grad norm after the first pass", grad_norm(w).item())
    l2.backward()


(w.sum() * 0).backward()  # w.grad starts as zeros
step()
print("w.grad", [round(v, 4) for v in w.grad.tolist()])
