# GF003 safe merge wrong: a clamping gradient hook registered by `getattr(w, name)` with a reversed name, handed to `functools.partial` (not called at once, not assigned): it runs once per pass, clamp(g1) + clamp(g2) before, clamp(g1 + g2) after the merge.
import functools

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
functools.partial(getattr(w, "kooh_retsiger"[::-1]), lambda g: g.clamp(-0.5, 0.5))()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
