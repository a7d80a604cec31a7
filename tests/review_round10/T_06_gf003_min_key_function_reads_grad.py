# GF003 safe merge wrong: `min([1, 2], key=key)` between the passes calls the file's `key`, which reads `w.grad`: 1.4433 before, 0.0 after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
def key(v):
    print("g", 0.0 if w.grad is None else round(w.grad.norm().item(), 4))
    return v


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(min([1, 2], key=key))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
