# GF003 safe merge wrong: `with no_grad(...)` counted as letting exceptions through by its name alone, but the file imports `contextlib.suppress as no_grad`; from the second iteration on x keeps the first iteration's graph, which the merged backward freed: it raises.
import torch
import torch.nn as nn
from contextlib import suppress as no_grad

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    for step in range(3):
        with no_grad(ZeroDivisionError):
            if step > 0:
                1 / 0
            x = (w * 2).tanh()
        l1 = (x * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
