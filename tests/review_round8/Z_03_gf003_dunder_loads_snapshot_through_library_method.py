# GF003 safe merge wrong: `if ema:` between the passes runs `EMA.__bool__`, which restores the layer from a snapshot (`net.load_state_dict(...)`, no operand of the method): the first pass ran on the old weight, the merged pass sees the new one and raises (a saved tensor changed in place).
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Linear(3, 1)
snapshot = {k: v.clone() * 0.5 for k, v in net.state_dict().items()}
x = torch.randn(4, 3, requires_grad=True)


class EMA:
    def __bool__(self):
        net.load_state_dict(snapshot)
        return True


ema = EMA()


def step():
    l1 = net(x).tanh().sum()
    l2 = (x * x).sum()
    l1.backward(retain_graph=True)
    if ema:
        print("restored")
    l2.backward()


if __name__ == "__main__":
    step()
    print(x.grad.tolist())
