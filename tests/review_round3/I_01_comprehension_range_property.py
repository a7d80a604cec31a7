# GF004 safe fix: two `sum([...])` comprehensions over `range(cfg.n)`, `cfg.n` a property of the file.
import torch

torch.manual_seed(0)
W = torch.randn(5, 4, 4, requires_grad=True)
V = torch.randn(5, 4, 4, requires_grad=True)
k = 3.0


class Cfg:
    def __init__(self):
        self.calls = 2

    @property
    def n(self):  # grows by one on each read
        self.calls += 1
        return self.calls


cfg = Cfg()


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


def step():
    series = [torch.softmax(W[i], -1) for i in range(5)]
    prior = [torch.softmax(V[i], -1) for i in range(5)]
    rec = (W ** 2).mean()
    s_loss = sum([torch.mean(kl(series[u], prior[u].detach())) for u in range(cfg.n)])
    p_loss = sum([torch.mean(kl(series[u].detach(), prior[u])) for u in range(cfg.n)])
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
    print("loss", loss1.item(), loss2.item())


step()
print("W.grad norm", W.grad.norm().item())
print("V.grad norm", V.grad.norm().item())
