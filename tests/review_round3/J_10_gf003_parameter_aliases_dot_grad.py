# GF003 safe fix wrong: the parameter `grads` holds `w.grad` (the in-file caller passes it); the first
# backward accumulates into it in place before l2's forward reads it. Merged: l2 reads it before.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step(grads):
    h = (w * 2).tanh()
    l1 = h.sum()
    l1.backward(retain_graph=True)
    l2 = (h * grads[0]).sum()
    l2.backward()


if __name__ == "__main__":
    w.grad = torch.zeros(3)
    step([p.grad for p in [w]])
    print(w.grad)
