# GF003 safe merge wrong: `buf.copy_(...)` in the loop chains each iteration's graph onto `buf`'s earlier one (a tensor from before the loop updated in place in it); the merged backward frees the earlier graph and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.functional as F
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)




def train():
    buf = torch.zeros(3)
    for step in range(3):
        l1 = (buf.copy_((w * 3).tanh()) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()



if __name__ == "__main__":
    train()
    print(w.grad)
