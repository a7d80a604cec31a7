# GF003 no finding: `g` (bound by `:=`) is the `.grad` tensor, read between the passes (the merge would print zeros, not the first pass's gradient).
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
w.grad = torch.zeros(4)


def step():
    if (g := w.grad) is None:
        return
    l1 = (w * 2).tanh().sum()
    l1.backward(retain_graph=True)
    print("between", float(g.sum()))
    l2 = (w * w).sum()
    l2.backward()


if __name__ == "__main__":
    step()
    print("w.grad", w.grad.tolist())
