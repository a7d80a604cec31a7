# GF003 safe fix wrong: as 12, for a merge at module level: the atexit callback registered before the
# passes backpropagates l1 again after them. Rewrite raises at exit.
import atexit
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def finish():
    l1.backward()
    print("at exit:", w)


if __name__ == "__main__":
    atexit.register(finish)
    l1 = w.exp().sum()
    l1.backward(retain_graph=True)
    l2 = (w * w).sum()
    l2.backward()
    print(w)
