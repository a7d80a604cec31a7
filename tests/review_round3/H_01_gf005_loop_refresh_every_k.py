# GF005 safe fix wrong: `feats` is bound only inside the loop, under `if step % 2 == 0`, so odd steps
# backpropagate through the previous step's graph again; names bound inside the loop are taken as fresh
# each iteration. Original runs; rewrite raises 'backward through the graph a second time'.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    for step in range(4):
        if step % 2 == 0:
            feats = (w * 2).tanh()  # refreshed every other step
        loss = (feats * (step + 1)).sum()
        loss.backward(retain_graph=True)


if __name__ == "__main__":
    train()
    print(w.grad)
