# Review reproducer (rep1_random_arg_duplicated): an argument that draws random numbers, read twice in the inlined helper (it would run twice).
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

    def loss_function(self, P, S, lam, x):
        return ((self.h - x) ** 2).mean() + (self.h * x).mean() - lam * self.d(P, S).mean()

    def min_loss(self, x):
        S = self.S.detach()
        return self.loss_function(self.P, S, -self.lam, x)

    def max_loss(self, x):
        P = self.P.detach()
        return self.loss_function(P, self.S, self.lam, x)

    def training_step(self, x, opt):
        self(x)
        min_loss = self.min_loss(x + 0.1 * torch.randn_like(x))
        max_loss = self.max_loss(x)
        opt.zero_grad()
        min_loss.backward(retain_graph=True)
        max_loss.backward()
        opt.step()


model = M()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step():
    model.training_step(torch.randn(2, 4), opt)
