# GF005 safe fix wrong: `probe(loss)` runs `Probe.forward` (nn.Module.__call__), which backpropagates the loss again.
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
    loss = (w * 2).tanh().sum()
    loss.backward(retain_graph=True)
    print(w.grad.tolist())
    probe(loss)
    print(w.grad.tolist())
