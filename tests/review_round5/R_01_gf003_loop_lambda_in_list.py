# GF003 safe merge wrong: `fns = [lambda: h]` counted as graph-free (a lambda was checked for its defaults only, not what it reads from around it); the loop calls it and reads h (graph built before the loop), the merged backward frees that graph and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    fns = [lambda: h]
    for step in range(3):
        l1 = (fns[0]() * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
