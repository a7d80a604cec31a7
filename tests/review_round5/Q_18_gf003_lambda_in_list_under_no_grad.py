# GF003 safe merge wrong: `[lambda: step()]` called under `with torch.no_grad():`; the merged sum has no graph.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def step():
    with torch.enable_grad():
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()


if __name__ == "__main__":
    jobs = [lambda: step()]
    with torch.no_grad():
        jobs[0]()
    print(w.grad.tolist())
