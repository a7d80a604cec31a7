# GF003 safe fix wrong: a lambda handed to `atexit.register` before the passes backpropagates l1 again
# at exit (its call is on an earlier line than the passes). Rewrite raises at exit.
import atexit
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

if __name__ == "__main__":
    atexit.register(lambda: (l1.backward(), print("at exit:", w.grad)))
    l1 = w.exp().sum()
    l1.backward(retain_graph=True)
    l2 = (w * w).sum()
    l2.backward()
    print("w.grad", w.grad.tolist())
