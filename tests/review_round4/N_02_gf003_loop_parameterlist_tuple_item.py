# GF003 safe merge wrong: nn.ParameterList keeps non-tensor items (a tuple holding h) as they are, graph and all; taken graph-free, the merge frees h's graph and the next iteration raises.
import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)


def train():
    h = (w * 2).tanh()
    pl = nn.ParameterList([(h,)])
    for step in range(3):
        l1 = (pl[0][0] * w).sum()
        l1.backward(retain_graph=True)
        l2 = (w * w).sum()
        l2.backward()


if __name__ == "__main__":
    train()
    print(w.grad)
