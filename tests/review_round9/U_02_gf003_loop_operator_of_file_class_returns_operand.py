# GF003 safe merge wrong: `Keeper() * buf` runs the file's `Keeper.__mul__`, which returns `buf`: an operand of arithmetic was taken for a new value whatever the operator runs; `v.copy_(h)` writes h's graph into `buf`, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Keeper:
    def __mul__(self, other):
        return other


def train():
    h = (w * 2).tanh()
    buf = torch.zeros(3)
    v = Keeper() * buf
    v.copy_(h)
    for step in range(3):
        l1 = (buf * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
