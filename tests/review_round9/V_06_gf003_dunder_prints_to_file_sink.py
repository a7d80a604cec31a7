# GF003 safe merge wrong: `f"{stamp}"` runs `Stamp.__format__`, whose `print(..., file=self.sink)` runs `Sink.write`, which reads `w.grad`: 1.4433 before, 0.0 after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Sink:
    def __init__(self):
        self.lines = []

    def write(self, text):
        if text.strip():
            self.lines.append(f"{text} |g|={0.0 if w.grad is None else w.grad.norm().item():.4f}")


class Stamp:
    def __init__(self, sink):
        self.sink = sink

    def __format__(self, spec):
        print("stamp", file=self.sink)
        return "ok"


stamp = Stamp(Sink())


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    s = f"{stamp}"
    l2.backward()


if __name__ == "__main__":
    step()
    print(stamp.sink.lines)
    print(w.grad.tolist())
