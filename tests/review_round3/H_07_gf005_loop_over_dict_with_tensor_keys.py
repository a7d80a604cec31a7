# GF005 safe fix wrong: `graph_free` checks only a dict display's values, not its keys; the dict's key is
# a tensor with a graph, iterated again in every epoch. Rewrite raises.
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    cache = {(w * 2).tanh(): "feats"}
    for epoch in range(2):
        for h in cache:
            loss = h.sum()
            loss.backward(retain_graph=True)


if __name__ == "__main__":
    train()
    print(w.grad)
