# GF003 safe merge wrong: the caller evaluate() is decorated @torch.no_grad(); the merged (l1 + l2) has no graph and raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def adapt():
    with torch.enable_grad():
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


@torch.no_grad()
def evaluate():
    adapt()
    print(w.grad.tolist())


if __name__ == "__main__":
    evaluate()
