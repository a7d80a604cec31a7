# Reach (not a bug): argparse's plain parse (`parser.parse_args([])`, `parse_known_args(args=[])`) stores only on a new namespace, and `@functools.wraps(f)` on a `def` only on the new function: torch's names stay proven, `torch.mean(buf)` a new tensor, and the merge stays safe.
import argparse
import functools

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
parser = argparse.ArgumentParser()
parser.add_argument("--scale", type=float, default=0.5)
args = parser.parse_args([])
extra, rest = parser.parse_known_args(args=[])


def logged(fn):
    @functools.wraps(fn)
    def inner(*a):
        return fn(*a)

    return inner


@logged
def train():
    buf = torch.zeros(3)
    v = torch.mean(buf)
    print(v.item() * args.scale, extra.scale)
    for step in range(3):
        l1 = (buf * w).sum() * 0.5
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
