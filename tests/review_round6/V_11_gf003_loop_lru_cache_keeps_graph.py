# GF003 safe merge wrong: `@functools.lru_cache` keeps the first call's result, graph and all, for every later call in the loop (a decorated def was taken as its body); the merged backward frees it and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

@functools.lru_cache(maxsize=None)
def feat():
    return (w * 2).tanh()


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
