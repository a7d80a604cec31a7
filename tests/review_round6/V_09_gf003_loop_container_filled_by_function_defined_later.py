# GF003 safe merge wrong: `setup`, defined after `train` and called before its loop, hands `cfg` to `dict.__setitem__` (only the code up to the loop was searched); the merged backward frees the stored graph and the next iteration raises.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

cfg = {"h": torch.zeros(3)}

def train():
    setup()
    for step in range(3):
        l1 = (cfg["h"] * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()



def setup():
    dict.__setitem__(cfg, "h", (w * 2).tanh())


if __name__ == "__main__":
    train()
    print(w.grad)
