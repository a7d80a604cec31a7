# GF004 unsafe fix: `self.optimizer` is a class of the file whose `zero_grad` lengthens the list
# `prior` between the two uses of the coefficient `len(prior)`: not proven a torch optimizer.
import torch

torch.manual_seed(0)
W = torch.randn(4, 3, 3, requires_grad=True)
V = torch.randn(4, 3, 3, requires_grad=True)


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=-1)


class Bookkeeper:
    def __init__(self):
        self.seen = []

    def zero_grad(self):
        self.seen.append(self.seen[0])


class Solver:
    def __init__(self):
        self.optimizer = Bookkeeper()
        self.sgd = torch.optim.SGD([W, V], lr=0.1)

    def fit(self, epochs):
        for epoch in range(epochs):
            for i in range(3):
                self.sgd.zero_grad()
                series = [torch.softmax(W[j] * (i + 1), -1) for j in range(4)]
                prior = [torch.softmax(V[j], -1) for j in range(4 - i)]
                rec = (W ** 2).mean()
                self.optimizer.seen = prior
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
                self.sgd.step()
                print("loss", loss1.item(), loss2.item())


Solver().fit(2)
print("W", W.norm().item())
print("V", V.norm().item())
