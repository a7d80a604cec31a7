# GF003 safe fix wrong: the two backward calls sit in `with torch.no_grad():` (backward works there);
# the merged `(l1 + l2)` is computed under no_grad and has no grad_fn. Rewrite raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    h = (w * 2).tanh()
    l1 = h.sum()
    l2 = h.pow(2).sum()
    with torch.no_grad():
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad)
