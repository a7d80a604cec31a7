# GF003 safe merge wrong: `self.probe(l1)` runs `Probe.forward` (nn.Module.__call__), which backpropagates the loss the first pass kept.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Probe(nn.Module):
    def forward(self, loss):
        loss.backward()
        return loss


class Trainer:
    def __init__(self):
        self.probe = Probe()

    def train(self):
        l1 = (w * 2).tanh().sum()
        l2 = (w * w).sum()
        l1.backward(retain_graph=True)
        l2.backward()
        self.probe(l1)
        print(w.grad.tolist())


if __name__ == "__main__":
    Trainer().train()
