# The coefficient read through a property that changes on each read, defined in a one-line class body
# (`class Counted: lambda_ = property(...)`), which the property scan once skipped.
import torch
import torch.nn as nn

torch.manual_seed(0)


class Counted: lambda_ = property(lambda self: self.bump())


class AnomalyTransformer(Counted, nn.Module):
    def __init__(self, lambda_):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.prior = nn.Linear(4, 4)
        self._lam = lambda_
        self.calls = 0

    def forward(self, x):
        h = self.enc(x)
        self.P = torch.softmax(self.prior(h), -1)
        self.S = torch.softmax(h, -1)
        self.output = h
        return h

    def bump(self):
        self.calls += 1
        return self._lam * self.calls

    def discrepancy(self, P, S):
        return (P * (P / S).log()).sum(-1) + (S * (S / P).log()).sum(-1)

    def loss_function(self, x_hat, P, S, lambda_, x):
        frob_norm = torch.linalg.matrix_norm(x_hat - x, ord="fro")
        ret = frob_norm - lambda_ * torch.linalg.norm(self.discrepancy(P, S), ord=1, dim=1)
        return ret.mean()

    def min_loss(self, x):
        P = self.P
        S = self.S.detach()
        lambda_ = -self.lambda_
        return self.loss_function(self.output, P, S, lambda_, x)

    def max_loss(self, x):
        P = self.P.detach()
        S = self.S
        lambda_ = self.lambda_
        return self.loss_function(self.output, P, S, lambda_, x)

    def training_step(self, x, optimizer):
        self(x)
        min_loss = self.min_loss(x)
        max_loss = self.max_loss(x)
        optimizer.zero_grad()
        min_loss.backward(retain_graph=True)
        max_loss.backward()
        optimizer.step()


model = AnomalyTransformer(3.0)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step():
    model.training_step(torch.randn(2, 4, 4), opt)
