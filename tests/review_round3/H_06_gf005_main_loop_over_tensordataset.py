# GF005 safe fix wrong (module level, under the main guard): as 05, the loop over a TensorDataset built
# from tensors with a graph. Rewrite raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, 3, requires_grad=True)
v = torch.randn(3, requires_grad=True)

if __name__ == "__main__":
    opt = torch.optim.SGD([w, v], lr=0.1)
    x, y = torch.randn(4, 3), torch.randn(4)
    feats = (x @ w).tanh()
    ds = torch.utils.data.TensorDataset(feats, y)
    for fb, yb in ds:
        loss = ((fb * v).sum() - yb).pow(2)
        loss.backward(retain_graph=True)
    opt.step()
    print(w, v)
