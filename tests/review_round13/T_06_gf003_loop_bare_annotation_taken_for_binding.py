# GF003 safe merge wrong: `feats: torch.Tensor` (an annotation with no value) was taken for a binding of `feats` in every iteration, but it binds nothing: `feats` keeps the graph an earlier iteration built, which the merged backward frees, and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    for step in range(4):
        feats: torch.Tensor
        if step % 2 == 0:
            feats = (w * 2).tanh()
        l1 = (feats * (step + 1)).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
