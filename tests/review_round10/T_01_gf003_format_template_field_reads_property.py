# GF003 safe merge wrong: `"{0.gnorm:.4f}".format(m)` between the passes reads the property `gnorm` by the template's field (`str.format` runs `getattr`), whose getter reads `w.grad`: 1.4433 before, 0.0000 after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)

class M:
    @property
    def gnorm(self):
        return 0.0 if w.grad is None else w.grad.norm().item()


m = M()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("{0.gnorm:.4f}".format(m))
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
