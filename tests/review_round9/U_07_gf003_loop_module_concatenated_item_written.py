# GF003 safe merge wrong: `seq + nn.Sequential()` is a new Sequential holding the same Linear (an operand of arithmetic on a torch object was taken for a read); setting its bias to h through `seq2[0]` puts h's graph into `seq`, which the merged backward frees, and the next iteration raises.
import torch
from torch import nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    seq = nn.Sequential(nn.Linear(3, 3))
    seq2 = seq + nn.Sequential()
    del seq2[0].bias
    seq2[0].bias = h
    for step in range(3):
        l1 = (seq(w) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
