# GF003 safe merge wrong: `f"{mon}"` between the passes runs `Monitor.__format__`, which reads the property `self.gnorm`; its getter reads `w.grad` (the first pass's gradient): 1.4433 before, 0.0 after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Monitor:
    @property
    def gnorm(self):
        return 0.0 if w.grad is None else w.grad.norm().item()

    def __format__(self, spec):
        return format(self.gnorm, ".4f")


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
