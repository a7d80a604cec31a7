# GF003 safe merge wrong: adapt() is called inside with torch.no_grad() in the file; the merged (l1 + l2) built there has no graph and raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def adapt():
    with torch.enable_grad():
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    with torch.no_grad():
        adapt()
    print(w.grad.tolist())
