# GF003 safe merge wrong: feats bound in a with-body under contextlib.suppress counts as bound afresh each iteration, but when the body raises (odd steps) the old feats, with its graph, is kept; the merge frees it and the next iteration raises.
import contextlib
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    for step in range(4):
        with contextlib.suppress(ZeroDivisionError):
            feats = (w * 2).tanh() * (1 / (1 - step % 2))
        l1 = (feats * (step + 1)).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
