# GF003 safe merge wrong: torch.set_grad_enabled(False) at module level; the merged (l1 + l2) has no graph and raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
torch.set_grad_enabled(False)


def adapt():
    with torch.enable_grad():
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    adapt()
    print(w.grad.tolist())
