# GF003 safe merge wrong: `with nullcontext():` counted as letting exceptions through by its name, but the file's own class `nullcontext` swallows them; x keeps the first iteration's graph, which the merged backward freed: it raises.
import torch
import torch.nn as nn
class nullcontext:
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return True

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    for step in range(3):
        with nullcontext():
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
