# GF003 safe fix wrong: as J_16, the callback registered by a decorator (`@atexit.register`) before
# the passes backpropagates l1 again at exit. Rewrite raises at exit.
import atexit
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
if __name__ == "__main__":
    @atexit.register
    def finish():
        l1.backward()
        print("at exit:", w.grad)
    l1 = w.exp().sum()
    l1.backward(retain_graph=True)
    l2 = (w * w).sum()
    l2.backward()
    print(w)
