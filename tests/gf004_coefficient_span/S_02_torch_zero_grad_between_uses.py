# GF004 safe fix: `self.optimizer.zero_grad()` (a torch optimizer) runs between the two uses of
# the coefficient `len(prior)`: it only clears gradients, and the coefficient reads none.
import torch

torch.manual_seed(0)
W = torch.randn(4, 3, 3, requires_grad=True)
V = torch.randn(4, 3, 3, requires_grad=True)


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


class Solver:
    def __init__(self):
        self.optimizer = torch.optim.SGD([W, V], lr=0.1)

    def fit(self, epochs):
        for epoch in range(epochs):
            for i in range(3):
                series = [torch.softmax(W[j] * (i + 1), -1) for j in range(4)]
                prior = [torch.softmax(V[j], -1) for j in range(4 - i)]
                rec = (W ** 2).mean()
                series_loss = 0.0
                prior_loss = 0.0
                for u in range(len(prior)):
                    series_loss += torch.mean(kl(series[u], prior[u].detach()))
                    prior_loss += torch.mean(kl(series[u].detach(), prior[u]))
                series_loss = series_loss / len(prior)
                self.optimizer.zero_grad()
                prior_loss = prior_loss / len(prior)
                loss1 = rec - 3.0 * series_loss
                loss2 = rec + 3.0 * prior_loss
                loss1.backward(retain_graph=True)
                loss2.backward()
                print("grads", W.grad.norm().item(), V.grad.norm().item())
                self.optimizer.step()
                print("loss", loss1.item(), loss2.item())


Solver().fit(2)
print("W", W.norm().item())
print("V", V.norm().item())
