# GF004 unsafe fix: the coefficient `cfg.k` is read in each iteration of the per-layer loop and again
# after it; `anneal(cfg)` at the end of the loop body changes it between iteration u's use and the next
# ones (the loop's back edge), in the loop body around the pair.
import torch

torch.manual_seed(0)
W = torch.randn(4, 3, 3, requires_grad=True)
V = torch.randn(4, 3, 3, requires_grad=True)


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


class Cfg:
    k = 3.0


def anneal(c):
    c.k = 2 * c.k


class Solver:
    def __init__(self):
        self.optimizer = torch.optim.SGD([W, V], lr=0.1)

    def fit(self, epochs, cfg):
        for epoch in range(epochs):
            for i in range(3):
                self.optimizer.zero_grad()
                series = [torch.softmax(W[j] * (i + 1), -1) for j in range(4)]
                prior = [torch.softmax(V[j], -1) for j in range(4 - i)]
                rec = (W ** 2).mean()
                series_loss = 0.0
                prior_loss = 0.0
                for u in range(len(prior)):
                    series_loss += torch.mean(kl(series[u], prior[u].detach())) / cfg.k
                    prior_loss += torch.mean(kl(series[u].detach(), prior[u]))
                    anneal(cfg)
                series_loss = series_loss / len(prior)
                prior_loss = prior_loss / len(prior) / cfg.k
                loss1 = rec - 3.0 * series_loss
                loss2 = rec + 3.0 * prior_loss
                loss1.backward(retain_graph=True)
                loss2.backward()
                print("grads", W.grad.norm().item(), V.grad.norm().item())
                self.optimizer.step()
                print("loss", loss1.item(), loss2.item())


Solver().fit(2, Cfg())
print("W", W.norm().item())
print("V", V.norm().item())
