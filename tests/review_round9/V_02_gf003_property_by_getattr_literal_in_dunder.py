# GF003 safe merge wrong: `__format__` reads the property by a literal name (`getattr(self, "gnorm")`); its getter reads `w.grad`, written by the first pass in the original only.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Monitor:
    @property
    def gnorm(self):
        return 0.0 if w.grad is None else w.grad.norm().item()

    def __format__(self, spec):
        return format(getattr(self, "gnorm"), ".4f")


mon = Monitor()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(f"grad norm after the first loss: {mon}")
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
