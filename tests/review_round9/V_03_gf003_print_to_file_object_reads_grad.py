# GF003 safe merge wrong: `print(..., file=sink)` between the passes runs `Sink.write` by protocol, which reads `w.grad` (the first pass's gradient): a norm of 1.4433 before, 0.0 after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Sink:
    def __init__(self):
        self.lines = []

    def write(self, text):
        if text.strip():
            self.lines.append(f"{text} |g|={0.0 if w.grad is None else w.grad.norm().item():.4f}")


sink = Sink()


def step():
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    print("after the first loss", file=sink)
    l2.backward()


if __name__ == "__main__":
    step()
    print(sink.lines)
    print(w.grad.tolist())
