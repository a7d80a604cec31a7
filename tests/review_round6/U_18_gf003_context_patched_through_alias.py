# GF003 safe merge wrong: `torch.enable_grad` is patched through another import name (`T.enable_grad = ...suppress(RuntimeError)`), so `with torch.enable_grad():` swallows the error of the second backward (a non-scalar loss): the original keeps the first pass's gradient, the merged pass raises before any.
import contextlib

import torch
import torch as T

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
T.enable_grad = lambda: contextlib.suppress(RuntimeError)


def step():
    l1 = (w * 2).tanh().sum()
    l2 = w * w
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    with torch.enable_grad():
        step()
    print(w.grad)
