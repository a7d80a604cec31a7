# GF003 safe merge wrong: `attrgetter` imported as `pick` reads `register_hook` by a name decoded from bytes: the clamping hook runs once per pass, clamp(g1) + clamp(g2) before, clamp(g1 + g2) after the merge.
from operator import attrgetter as pick

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
pick(bytes([114, 101, 103, 105, 115, 116, 101, 114, 95, 104, 111, 111, 107]).decode())(w)(lambda g: g.clamp(-0.5, 0.5))


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
