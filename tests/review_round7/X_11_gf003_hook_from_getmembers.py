# GF003 safe merge wrong: a clamping gradient hook registered through `inspect.getmembers(torch.Tensor)`, its key joined from pieces: it runs once per pass, clamp(g1) + clamp(g2) before, clamp(g1 + g2) after the merge.
import inspect
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
dict(inspect.getmembers(torch.Tensor))["_".join(["register", "hook"])](w, lambda g: g.clamp(-0.5, 0.5))


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


def train():
    step()


if __name__ == "__main__":
    train()
    print(w.grad.tolist())
