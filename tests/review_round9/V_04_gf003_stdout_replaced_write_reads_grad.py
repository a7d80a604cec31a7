# GF003 safe merge wrong: `sys.stdout` is a `Tee` of the file, so a plain `print(...)` between the passes runs `Tee.write`, which reads `w.grad`: 1.4433 before, 0.0 after the merge.
import sys

import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Tee:
    def __init__(self, out):
        self.out = out

    def write(self, text):
        if text.strip():
            text = f"{text} |g|={0.0 if w.grad is None else w.grad.norm().item():.4f}"
        self.out.write(text)

    def flush(self):
        self.out.flush()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("after the first loss")
    l2.backward()


if __name__ == "__main__":
    sys.stdout = Tee(sys.stdout)
    step()
    print(w.grad.tolist())
