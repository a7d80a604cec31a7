# GF003 safe fix wrong: `torch.utils.data.TensorDataset(feats, y)` is taken as graph-free (any capitalised
# torch.* constructor is), but it holds `feats` with its graph; every row shares it. Rewrite raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, 3, requires_grad=True)
v = torch.randn(3, requires_grad=True)


def train(x, y):
    feats = (x @ w).tanh()
    ds = torch.utils.data.TensorDataset(feats, y)
    for fb, yb in ds:
        l1 = ((fb * v).sum() - yb).pow(2)
        l1.backward(retain_graph=True)
        l2 = (v * v).sum()
        l2.backward()


if __name__ == "__main__":
    train(torch.randn(4, 3), torch.randn(4))
    print(w.grad, v.grad)
