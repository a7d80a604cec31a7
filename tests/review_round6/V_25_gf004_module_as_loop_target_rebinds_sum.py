# GF004 safe fix, wrong: `for _mod in [_me]: _mod.sum = _wsum` rebinds the file's own `sum` through a loop target: V.grad changes.
import torch

torch.manual_seed(0)
W = torch.randn(5, 4, 4, requires_grad=True)
V = torch.randn(5, 4, 4, requires_grad=True)
k = 3.0

_calls = [0]
import builtins as _b0
_osum = _b0.sum
def _wsum(xs, start=0):
    _calls[0] += 1
    return _osum(xs, start) * _calls[0]
import train as _me
for _mod in [_me]:
    _mod.sum = _wsum


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


def step():
    series = [torch.softmax(W[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_loss = sum([torch.mean(kl(series[u], prior[u].detach())) for u in range(len(series))])
    p_loss = sum([torch.mean(kl(series[u].detach(), prior[u])) for u in range(len(series))])
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


if __name__ == '__main__':
    import train
    train.step()
    print('W.grad norm', train.W.grad.norm().item())
    print('V.grad norm', train.V.grad.norm().item())
