# GF004 safe fix, wrong: `_me.k = 0.5` between `loss1 = rec - k * s_loss` and `loss2 = rec + k * p_loss` (the file imported as itself) changes the coefficient the ratio cancels: V.grad changes.
import torch

torch.manual_seed(0)
W = torch.randn(5, 4, 4, requires_grad=True)
V = torch.randn(5, 4, 4, requires_grad=True)
k = 3.0


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


import train as _me

def step():
    series = [torch.softmax(W[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_loss = 0.0
    p_loss = 0.0
    for u in range(len(series)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    loss1 = rec - k * s_loss
    _me.k = 0.5
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


if __name__ == '__main__':
    import train
    train.step()
    print('W.grad norm', train.W.grad.norm().item())
    print('V.grad norm', train.V.grad.norm().item())
