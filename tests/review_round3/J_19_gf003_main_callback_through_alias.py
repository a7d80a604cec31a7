# GF003 safe fix wrong: as J_16, the callback handed to atexit through another name (`cb = finish`).
# Rewrite raises at exit.
import atexit
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def finish():
    l1.backward()
    print("at exit:", w.grad)


if __name__ == "__main__":
    cb = finish
    atexit.register(cb)
    l1 = w.exp().sum()
    l1.backward(retain_graph=True)
    l2 = (w * w).sum()
    l2.backward()
    print("w.grad", w.grad.tolist())
