# GF003 safe merge wrong: `logging.config.dictConfig` (an allowed module's submodule) builds the object a `"()"` factory returns and sets the attributes its `"."` mapping names by strings: `lambda: F.torch` (torch, reached as an attribute of `torch.nn.functional`) gets `mean = lambda t: t`, which the file's stores never showed; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import logging.config

import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def setup():
    logging.config.dictConfig({"version": 1, "handlers": {"h": {"()": lambda: F.torch, ".": {"mean": lambda t: t}}}})


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
    setup()
    train()
    print(w.grad)
