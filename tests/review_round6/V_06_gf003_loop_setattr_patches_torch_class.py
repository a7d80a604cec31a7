# GF003 safe merge wrong: `setattr(nn.Linear, "forward", lambda self, x: x + h)` patches torch's class; the merged backward frees h's graph (built before the loop) and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)




def train():
    h = (w * 2).tanh()
    lin = nn.Linear(3, 3)
    setattr(nn.Linear, "forward", lambda self, x: x + h)
    for step in range(3):
        l1 = (lin(w) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()



if __name__ == "__main__":
    train()
    print(w.grad)
