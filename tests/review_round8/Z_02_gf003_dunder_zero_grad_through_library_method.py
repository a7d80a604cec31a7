# GF003 safe merge wrong: `i % every` between the passes runs `Every.__rmod__`, which calls `opt.zero_grad()` (a library method given none of its operands): the original keeps only the second loss's gradient, the merged pass both.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)


class Every:
    def __init__(self, k):
        self.k = k

    def __rmod__(self, n):
        opt.zero_grad()
        return n % self.k


every = Every(2)


def train_step(i):
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    if i % every == 0:
        print("step", i)
    l2.backward()


if __name__ == "__main__":
    train_step(0)
    print(w.grad.tolist())
