# GF003 safe merge wrong: `h.__getattribute__('register_' + 'hook')(count)` registers a gradient hook by a computed name; it runs once per pass (twice in the original).
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
calls = []


def count(*a):
    calls.append(1)


def step():
    h = w * 2
    h.__getattribute__('register_' + 'hook')(count)
    l1 = h.tanh().sum()
    l2 = (h * h).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    step()
    print(len(calls), w.grad.tolist())
