# Reach (not a bug): `z = torch.ones(2).mean()`, a full reduction by a method whose name no class of the file defines (the file's `Meter` has `update` and `value`), formats a number in `f'{s_loss * z}'`: the fix stays safe.
import torch

torch.manual_seed(0)
W = torch.randn(5, 4, 4, requires_grad=True)
V = torch.randn(5, 4, 4, requires_grad=True)
k = 3.0
C = torch.randn(5, 4, 4)


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


class Meter:
    def __init__(self, n):
        self.v = torch.ones(n)

    def update(self, v):
        self.v = self.v + v

    def value(self):
        return self.v


def step():
    meter = Meter(2)
    meter.update(1.0)
    z = torch.ones(2).mean()
    print(meter.value())
    series = [torch.softmax(C[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_loss = 0.0
    p_loss = 0.0
    for u in range(len(series)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    print('frozen', f'{s_loss * z}')
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


step()
print("W.grad norm", W.grad.norm().item())
print("V.grad norm", V.grad.norm().item())
