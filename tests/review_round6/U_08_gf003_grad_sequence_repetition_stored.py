# GF003 safe merge wrong: the `.grad` tensor is kept in `G` (a list repeated: `[w.grad] * 1`) and read between the passes: it holds the first pass's gradient in the original, zeros after the merge.
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
w.grad = torch.zeros(4)
G = []


def step():
    G.extend([w.grad] * 1)
    l1 = (w * 2).tanh().sum()
    l1.backward(retain_graph=True)
    print("between", float(G[0].sum()))
    l2 = (w * w).sum()
    l2.backward()


if __name__ == "__main__":
    step()
    print("w.grad", w.grad.tolist())
