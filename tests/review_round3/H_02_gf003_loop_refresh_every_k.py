# GF003 safe fix wrong: as 01 (conditionally refreshed `feats`, carried to the next iteration), for a
# merge: (l1 + l2).backward() frees feats' graph that the next iteration's l1 needs. Rewrite raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    for step in range(4):
        if step % 2 == 0:
            feats = (w * 2).tanh()  # refreshed every other step
        l1 = (feats * (step + 1)).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
