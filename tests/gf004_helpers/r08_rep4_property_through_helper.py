# Review reproducer (rep4_property_through_helper): an operand read through a property that draws a dropout mask on each read.
import torch
import torch.nn as nn

torch.manual_seed(0)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)
        self.lam = 3.0

    def forward(self, x):
        self.h = self.enc(x)
        self.P = torch.softmax(self.h, -1)

    @property
    def S(self):  # a fresh dropout mask on each read
        return torch.softmax(-self.drop(self.h), -1)

    def d(self, P, S):
        return (P * (P / S).log()).sum(-1)

    def loss_function(self, P, S, lam):
        return (self.h ** 2).mean() - lam * self.d(P, S).mean()

    def min_loss(self):
        S = self.S.detach()
        return self.loss_function(self.P, S, -self.lam)

    def max_loss(self):
        P = self.P.detach()
        return self.loss_function(P, self.S, self.lam)

    def training_step(self, x, opt):
        self(x)
        min_loss = self.min_loss()
        max_loss = self.max_loss()
        opt.zero_grad()
        min_loss.backward(retain_graph=True)
        max_loss.backward()
        opt.step()


model = M()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step():
    model.training_step(torch.randn(2, 4), opt)
