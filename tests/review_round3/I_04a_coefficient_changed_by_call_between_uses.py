# GF004 safe fix: the coefficient `cfg.k` cancels in the ratio only if it holds one value at both
# uses, but `anneal(cfg)` between loss1 and loss2 doubles it (a call passing the root as an argument).
import torch

torch.manual_seed(0)
W = torch.randn(5, 4, 4, requires_grad=True)
V = torch.randn(5, 4, 4, requires_grad=True)


class Cfg:
    k = 3.0


def anneal(c):
    c.k = 2 * c.k


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


def step(cfg):
    series = [torch.softmax(W[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_loss = 0.0
    p_loss = 0.0
    for u in range(len(series)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    loss1 = rec - cfg.k * s_loss
    anneal(cfg)
    loss2 = rec + cfg.k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


step(Cfg())
print("W.grad norm", W.grad.norm().item())
print("V.grad norm", V.grad.norm().item())
