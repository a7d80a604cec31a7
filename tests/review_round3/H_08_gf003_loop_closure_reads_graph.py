# GF003 safe fix wrong: the loop reads only `feats`, a nested function (taken as graph-free), which
# returns `h` built before the loop with a graph. Rewrite raises in iteration 2.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()

    def feats():
        return h

    for i in range(2):
        l1 = (feats() * (i + 1)).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
