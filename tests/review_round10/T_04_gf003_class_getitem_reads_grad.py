# GF003 safe merge wrong: `M[0]` between the passes runs `M.__class_getitem__` (no call by name), which reads `w.grad`: 1.4433 before, 0.0 after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

class M:
    def __class_getitem__(cls, item):
        print("g", 0.0 if w.grad is None else round(w.grad.norm().item(), 4))
        return cls


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    x = M[0]
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
