# GF003 safe merge wrong: `LambdaLR(opt, lambda e: h)` counted as graph-free (a torch class given a lambda); the loop calls the kept lambda and reads h (graph built before the loop), the merged backward frees it and the next iteration raises.
import torch
import torch.nn as nn
import functools

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    opt = torch.optim.SGD([w], lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: h)
    for step in range(3):
        l1 = (sched.lr_lambdas[0](0) * w).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
