# GF003 safe merge wrong: `probe(l1)` at module level runs `Probe.forward`, which backpropagates the loss the first pass kept.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


class Probe(nn.Module):
    def forward(self, loss):
        loss.backward()
        return loss


if __name__ == "__main__":
    probe = Probe()
    l1 = (w * 2).tanh().sum()
    l2 = (w * w).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    print(w.grad.tolist())
    probe(l1)
    print(w.grad.tolist())
