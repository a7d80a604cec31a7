# GF003 safe merge wrong: `put(buf, h)` copies h into `buf` in the helper; the merged backward frees h's graph (built before the loop) and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

def put(t, v):
    t.copy_(v)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    put(buf, h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()



if __name__ == "__main__":
    train()
    print(w.grad)
