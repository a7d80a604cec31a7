# Near miss (safe and exact): factories of torch itself (`torch.eye`, `torch.zeros`) and the seeding functions of its device modules (`torch.random.manual_seed`) build no graph whatever they are given: the loop's tensors keep the safe merge.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    g = torch.random.manual_seed(0)
    ident = torch.eye(3)
    buf = torch.zeros(3)
    for step in range(3):
        feats = (w * 2).tanh()
        l1 = (feats @ ident * (buf + 1)).sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
    print(g.initial_seed())


if __name__ == "__main__":
    train()
    print(w.grad)
