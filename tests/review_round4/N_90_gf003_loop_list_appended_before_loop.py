# GF003 safe merge wrong (found while fixing N_01..N_18): a list bound empty before the loop and given h (graph) by `outs.append(h)` before it counted as graph-free (only its binding `[]` was checked); the merge frees h's graph and the next iteration raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    outs = []
    outs.append(h)
    for step in range(3):
        l1 = (outs[0] * w).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
