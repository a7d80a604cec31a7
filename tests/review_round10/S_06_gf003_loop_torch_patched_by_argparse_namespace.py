# GF003 safe merge wrong: `parser.parse_args(["--mean", "1"], namespace=torch)` stores the option's value on `torch` as the attribute its `dest` names, a string: `torch.mean` becomes a function returning its argument, which the file's stores (`stored`) never showed; `torch.mean(buf)` was taken for a new tensor, and `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import argparse

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
parser = argparse.ArgumentParser()
parser.add_argument("--mean", type=lambda text: lambda t: t)
parser.parse_args(["--mean", "1"], namespace=torch)


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = torch.mean(buf)
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
