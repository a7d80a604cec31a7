# GF003 safe merge wrong (review, round 4): a list bound empty before the loop and filled under another name (`alias = outs; alias.append(h)`) counted as graph-free from its binding `[]`; the merge frees h's graph and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    outs = []
    alias = outs
    alias.append(h)
    for step in range(3):
        l1 = (outs[0] * w).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
