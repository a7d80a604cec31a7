# GF003 safe fix wrong: as 03 (`h_prev` read before its binding in the loop body) for a merge. Rewrite raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    for step in range(3):
        h = (w * (step + 1)).tanh()
        l1 = h.sum()
        if step > 0:
            l1 = l1 + (h - h_prev).pow(2).sum()  # temporal consistency
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()
        h_prev = h


if __name__ == "__main__":
    train()
    print(w.grad)
