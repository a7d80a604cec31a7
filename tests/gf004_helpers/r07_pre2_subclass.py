# Review reproducer (pre2_subclass): a subclass overrides a single-return helper whose only call is the term.
import torch
import torch.nn as nn

torch.manual_seed(0)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.lam = 3.0

    def forward(self, x):
        self.h = self.enc(x)
        self.P = torch.softmax(self.h, -1)
        self.S = torch.softmax(-self.h, -1)

    def d(self, P, S):
        return (P * (P / S).log()).sum(-1)

    def min_loss(self):
        return self.lam * self.d(self.P, self.S.detach()).mean()

    def max_loss(self):
        return -self.lam * self.d(self.P.detach(), self.S).mean()

    def training_step(self, x, opt):
        self(x)
        min_loss = self.min_loss()
        max_loss = self.max_loss()
        opt.zero_grad()
        min_loss.backward(retain_graph=True)
        max_loss.backward()
        opt.step()


class Sub(M):
    def max_loss(self):
        return -2 * self.lam * self.d(self.P.detach(), self.S).mean()


model = Sub()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step():
    model.training_step(torch.randn(2, 4), opt)
