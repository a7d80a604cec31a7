# GF003 safe merge wrong: `def feat(cache={})` stores the first call's result into its default, kept across calls; the merged backward frees its graph and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

def feat(cache={}):
    if "h" not in cache:
        cache["h"] = (w * 2).tanh()
    return cache["h"]


def train():
    pass
    for step in range(3):
        l1 = (feat() * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()



if __name__ == "__main__":
    train()
    print(w.grad)
