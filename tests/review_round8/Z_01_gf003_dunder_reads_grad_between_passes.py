# GF003 safe merge wrong: `print(f"{norm}")` between the passes runs `GradNorm.__format__`, which reads `w.grad` (the first pass's gradient): after the merge `w.grad` is still None there and `.norm()` raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class GradNorm:
    def __format__(self, spec):
        return format(w.grad.norm().item(), ".4f")


norm = GradNorm()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print(f"grad norm after the first loss: {norm}")
    l2.backward()


if __name__ == "__main__":
    step()
    print(w.grad.tolist())
