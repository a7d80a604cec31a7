# GF003 safe merge wrong: `setattr(sys.modules[__name__], "H", h)` rebinds the module's `H`; the merged backward frees h's graph (built before the loop) and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

import sys
H = torch.zeros(3)

def train():
    h = (w * 2).tanh()
    setattr(sys.modules[__name__], "H", h)
    for step in range(3):
        l1 = (H * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
