# GF003 safe merge wrong: `lin.apply(init)` hands `init` (a def reading h) every submodule, and it registers h as a buffer (`apply` was no store); the merged backward frees h's graph (built before the loop) and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)




def train():
    h = (w * 2).tanh()
    lin = nn.Linear(3, 3)
    def init(mod):
        if isinstance(mod, nn.Linear):
            mod.register_buffer("extra", h)
    lin.apply(init)
    for step in range(3):
        l1 = ((lin(w) + lin.extra) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()



if __name__ == "__main__":
    train()
    print(w.grad)
